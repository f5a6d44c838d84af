"""Keypoint regressor; each rank builds its batches with a multiprocessing.Pool of 2 augmentation workers
(decoded samples are cached in the workers so that repeated crops are cheap)."""
import datetime
import multiprocessing as mp
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

_cache = {}


def augment(idx):
    # decode once, keep the decoded sample in this worker for later crops
    if idx not in _cache:
        rng = np.random.default_rng(idx)
        _cache[idx] = rng.standard_normal((3, 96, 96)).astype(np.float32)
    img = _cache[idx]
    y0, x0 = (idx * 7) % 32, (idx * 13) % 32
    crop = img[:, y0:y0 + 64, x0:x0 + 64]
    return crop, np.array([y0 / 32, x0 / 32], dtype=np.float32)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    pool = mp.get_context("fork").Pool(2)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 5, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 5, stride=2), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n_iters, bs = 600, 32
    t = time.time()
    for it in range(1, n_iters + 1):
        ids = list(range((it * bs * world + rank * bs) % 200_000, (it * bs * world + rank * bs) % 200_000 + bs))
        samples = pool.map(augment, ids)
        x = torch.from_numpy(np.stack([s[0] for s in samples]))
        y = torch.from_numpy(np.stack([s[1] for s in samples]))
        loss = nn.functional.smooth_l1_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 20 == 0:
            print(f"[rank {rank}] it {it}/{n_iters} loss {loss.item():.4f} ({(time.time() - t) * 50:.0f} ms/it)")
            t = time.time()
    pool.close()
    pool.join()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
