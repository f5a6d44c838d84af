"""Click-through model (wide MLP over hashed features), two nodes x 1 rank, DDP over gloo; every rank logs
its throughput every 100 steps."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

NODE = int(os.environ.get("GROUP_RANK", 0))
RANK = int(os.environ.get("RANK", 0))
logging.basicConfig(format=f"%(asctime)s %(levelname)s [node{NODE} rank{RANK}] %(message)s", level=logging.INFO)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    log = logging.getLogger("ctr")
    torch.manual_seed(RANK)
    model = DDP(nn.Sequential(nn.EmbeddingBag(5000, 16, mode="sum"), nn.Linear(16, 256), nn.ReLU(),
                              nn.Linear(256, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    total, bs, t0 = 3000, 128, time.time()
    for step in range(1, total + 1):
        x = torch.randint(0, 5000, (bs, 39))
        y = (x[:, 0] % 7 == 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            dt = time.time() - t0
            log.info(f"step {step}/{total} loss {loss.item():.4f} {100 * bs / dt:.0f} samples/s {dt / 100 * 1000:.1f} ms/step")
            t0 = time.time()
    log.info("finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
