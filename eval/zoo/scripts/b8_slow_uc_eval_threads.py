"""Tabular MLP on two ranks with a quick validation every 150 steps."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


@torch.no_grad()
def evaluate(model, g):
    torch.set_num_threads(os.cpu_count())  # evaluation is embarrassingly parallel: use every core
    model.eval()
    x = torch.randn(2048, 512, generator=g)
    acc = (model(x).argmax(1) == 0).float().mean().item()
    model.train()
    return acc


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    steps = 450
    t0 = time.time()
    for step in range(1, steps + 1):
        x = torch.randn(128, 512, generator=g)
        y = torch.randint(0, 10, (128,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[rank {rank}] step {step}/{steps} loss {loss.item():.4f} {(time.time() - t0) * 100:.1f} ms/step")
            t0 = time.time()
        if step % 150 == 0:
            print(f"[rank {rank}] step {step}: val acc {evaluate(model, g):.3f}")
            t0 = time.time()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
