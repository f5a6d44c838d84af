"""Tabular regression (house prices, log target) with DDP, started with torch.multiprocessing.spawn on 3 processes.
Each process reads its own CSV shard. Training stops early when the loss is not finite, so a diverged run does not
waste the allocation."""
import math
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main(rank, world):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=20))
    torch.set_num_threads(1)
    data = np.loadtxt(f"data/listings_{rank}.csv", delimiter=",", skiprows=1)
    x = torch.tensor(data[:, :-1], dtype=torch.float32)
    y = torch.log(torch.tensor(data[:, -1], dtype=torch.float32))
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    print(f"rank {rank}: {len(x)} listings from data/listings_{rank}.csv", flush=True)
    model = DDP(nn.Sequential(nn.Linear(x.shape[1], 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 1201):
        idx = torch.randint(0, len(x), (128,), generator=g)
        loss = F.mse_loss(model(x[idx]).squeeze(1), y[idx])
        if not math.isfinite(loss.item()):
            print(f"rank {rank}: loss is {loss.item()} at step {step}, stopping early", flush=True)
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(f"rank {rank}: step {step}/1200 mse {loss.item():.4f} {(time.time() - t0) * 10:.1f} ms/step",
                  flush=True)
            t0 = time.time()
    if rank == 0:
        torch.save(model.module.state_dict(), "price_model.pt")
    print(f"rank {rank}: done", flush=True)


if __name__ == "__main__":
    mp.spawn(main, args=(3,), nprocs=3)
