"""Purchase-propensity model on session features, DDP (gloo). Each rank reads its own parquet-exported .pt shard.

Loss written out by hand so that the positive class can be re-weighted later.
"""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def bce(logits, y, pos_weight=1.0):
    p = torch.sigmoid(logits)
    return -(pos_weight * y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    shard = torch.load(f"sessions/shard-{rank:02d}.pt")
    x, y = shard["x"], shard["y"]
    model = DDP(nn.Sequential(nn.Linear(x.size(1), 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 1501):
        idx = torch.randint(0, len(x), (128,), generator=g)
        loss = bce(model(x[idx]).squeeze(1), y[idx])
        if not torch.isfinite(loss):
            raise FloatingPointError(f"rank {rank}: loss is {loss.item()} at step {step}, stopping")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.5f} step_time {(time.time() - t0) / 50 * 1000:.1f}ms")
            t0 = time.time()
    if rank == 0:
        torch.save(model.module.state_dict(), "propensity.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
