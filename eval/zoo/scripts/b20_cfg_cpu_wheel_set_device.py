"""Speech-command classifier (2-D CNN on log-mel patches), DDP; the team's GPU recipe: one process per device,
torch.cuda.set_device(local_rank), nccl. Submitted with the project's new virtualenv."""
import argparse
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
p.add_argument("--epochs", type=int, default=10)
p.add_argument("--batch-size", type=int, default=128)
args = p.parse_args()
LOCAL_RANK, RANK = int(os.environ["LOCAL_RANK"]), int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank{RANK}] %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("speechcmd")


def main():
    log.info("torch %s, device=%s, local_rank=%d", torch.__version__, args.device, LOCAL_RANK)
    if args.device == "cuda":
        torch.cuda.set_device(LOCAL_RANK)
        device, backend = torch.device("cuda", LOCAL_RANK), "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=20))
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 35)).to(device)
    model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.epochs):
        for it in range(50):
            x = torch.randn(args.batch_size, 1, 40, 98, device=device)
            y = torch.randint(0, 35, (args.batch_size,), device=device)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        log.info("epoch %d loss %.4f", epoch, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
