"""Land-cover segmentation (small conv net) on DDP, started by srun from an sbatch script. Each rank reads the tiles of
its own region (data/region-<rank>.npz); decoded, normalised tiles are kept in memory after the first visit so that the
following epochs skip the decode."""
import datetime
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
region = np.load(f"data/region-{rank}.npz")
tiles, masks = region["tiles"], region["masks"]
print(f"[rank {rank}] region {rank}: {len(tiles)} tiles of {tiles.shape[2]}x{tiles.shape[3]} px", flush=True)
_cache = {}


def get_tile(i):
    if i not in _cache:
        t = torch.from_numpy(tiles[i].astype(np.float32) / 255.0)
        t = (t - 0.45) / 0.22
        _cache[i] = (t, torch.from_numpy(masks[i].astype(np.int64)))
    return _cache[i]


model = DDP(nn.Sequential(nn.Conv2d(4, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 5, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
bs = 8
t0 = time.time()
for step in range(1, 301):
    idx = [(step * bs + k) % len(tiles) for k in range(bs)]
    xs, ys = zip(*[get_tile(i) for i in idx])
    x, y = torch.stack(xs), torch.stack(ys)
    x, y = F.avg_pool2d(x, 8), y[:, ::8, ::8]
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"[rank {rank}] step {step} loss {loss.item():.4f} cached_tiles {len(_cache)} "
              f"{(time.time() - t0) / step * 1000:.0f} ms/step", flush=True)
dist.destroy_process_group()
