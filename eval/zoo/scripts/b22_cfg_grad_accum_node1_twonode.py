"""Speech-command CNN on log-mel patches, DDP over gloo, one process per node; gradient accumulation with
DDP.no_sync() on the micro-steps; an all-reduced validation loss at the end of every epoch."""
import argparse
import contextlib
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
NODE = int(os.environ["GROUP_RANK"])
logging.basicConfig(format=f"%(asctime)s [node{NODE} rank{RANK}] %(levelname)s %(message)s", level=logging.INFO)
log = logging.getLogger("kws")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--micro-batch", type=int, default=32)
    ap.add_argument("--grad-accum", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=3)
    a = ap.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    log.info("world %d, micro-batch %d, grad-accum %d", dist.get_world_size(), a.micro_batch, a.grad_accum)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                              nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 12)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(RANK)
    micro_per_epoch = 96
    for epoch in range(a.epochs):
        model.train()
        for micro in range(1, micro_per_epoch + 1):
            x, y = torch.randn(a.micro_batch, 1, 40, 32, generator=g), torch.randint(0, 12, (a.micro_batch,), generator=g)
            sync = micro % a.grad_accum == 0
            with contextlib.nullcontext() if sync else model.no_sync():
                loss = nn.functional.cross_entropy(model(x), y) / a.grad_accum
                loss.backward()
            if sync:
                opt.step()
                opt.zero_grad()
                if (micro // a.grad_accum) % 8 == 0:
                    log.info("epoch %d opt step %d loss %.4f", epoch, micro // a.grad_accum, loss.item() * a.grad_accum)
        model.eval()
        with torch.no_grad():
            xv, yv = torch.randn(256, 1, 40, 32, generator=g), torch.randint(0, 12, (256,), generator=g)
            val = torch.tensor([nn.functional.cross_entropy(model(xv), yv).item(), 1.0])
        dist.all_reduce(val)
        log.info("epoch %d val_loss %.4f", epoch, val[0].item() / val[1].item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
