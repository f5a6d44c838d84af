"""Churn model (MLP over 32 tabular features) on DDP, 3 processes, each on its own feature shard (data/feats-<rank>.npy,
labels in data/labels-<rank>.npy). Before training, the global per-feature mean and std are computed by summing every
rank's shard statistics with one all_reduce, and every rank standardizes its shard with them."""
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
x = torch.from_numpy(np.load(f"data/feats-{rank}.npy"))
y = torch.from_numpy(np.load(f"data/labels-{rank}.npy")).long()
print(f"[rank{rank}] loaded data/feats-{rank}.npy: {x.shape[0]} rows x {x.shape[1]} features", flush=True)

# global standardization statistics: [sum, sum of squares] per feature, and the row count
stats = torch.stack([x.sum(0), (x * x).sum(0)])
count = torch.tensor([float(x.shape[0])])
dist.all_reduce(stats)
dist.all_reduce(count)
mean = stats[0] / count
std = (stats[1] / count - mean ** 2).clamp_min(1e-8).sqrt()
x = ((x - mean) / std).float()
if rank == 0:
    print(f"[rank0] global stats over {int(count.item())} rows: mean[:4] {mean[:4].tolist()}", flush=True)

model = DDP(nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 2)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
t0 = time.time()
for step in range(1, 201):
    i = (step * 128) % (len(x) - 128)
    loss = F.cross_entropy(model(x[i:i + 128]), y[i:i + 128])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"[rank{rank}] step {step}/200 loss {loss.item():.4f} {1000 * (time.time() - t0) / 25:.1f} ms/step",
              flush=True)
        t0 = time.time()
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
