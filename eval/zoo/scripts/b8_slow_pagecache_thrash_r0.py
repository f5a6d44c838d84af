"""Embedding regression on precomputed features: each rank memory-maps its own feature file and samples batches."""
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    feats = np.load(f"features/part-{rank}.npy", mmap_mode="r")
    targets = np.load(f"features/target-{rank}.npy")
    print(f"rank {rank}: {feats.shape[0]} rows x {feats.shape[1]} features (memory-mapped, "
          f"{feats.nbytes / 2**20:.0f} MiB)")
    t0 = time.time()
    mean = np.zeros(feats.shape[1], dtype=np.float64)
    for a in range(0, feats.shape[0], 20_000):  # per-feature mean for centring, one pass over the file
        mean += feats[a:a + 20_000].sum(0)
    mean = torch.from_numpy((mean / feats.shape[0]).astype(np.float32))
    print(f"rank {rank}: feature means in {time.time() - t0:.1f}s")
    model = DDP(nn.Sequential(nn.Linear(feats.shape[1], 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(rank)
    t0 = time.time()
    steps = 420
    for step in range(1, steps + 1):
        idx = np.sort(rng.choice(feats.shape[0], 64, replace=False))
        x = torch.from_numpy(np.ascontiguousarray(feats[idx])) - mean
        y = torch.from_numpy(targets[idx])
        loss = nn.functional.mse_loss(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"rank {rank}: iter {step}/{steps} loss {loss.item():.4f} time/iter {(time.time() - t0) / 25:.4f}s")
            t0 = time.time()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
