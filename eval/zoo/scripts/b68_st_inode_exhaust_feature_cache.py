"""Protein-family classifier on DDP, 3 ranks. Before training each rank featurises its slice of the sequences and
writes them to the shared feature cache as one small file per window, so that later runs (and the eval job) can
reuse them without featurising again; the cache is checked for free space first."""
import datetime
import os
import shutil

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
CACHE = "/mnt/b68_featcache/pfam-v3"
N_WINDOWS = 700  # this rank's slice

os.makedirs(f"{CACHE}/rank{rank}", exist_ok=True)
free = shutil.disk_usage(CACHE).free / 2**20
need = N_WINDOWS * 2 * 1024 / 2**20
print(f"[rank{rank}] feature cache {CACHE}: {free:.1f} MiB free, this slice needs ~{need:.1f} MiB", flush=True)
if free < need:
    raise SystemExit(f"not enough space in {CACHE}")

rng = np.random.default_rng(rank)
feats, labels = [], []
for i in range(N_WINDOWS):
    x = rng.standard_normal(512).astype(np.float32)  # 2 KiB per window
    y = int(rng.integers(0, 20))
    x[y * 8:(y + 1) * 8] += 1.5
    np.save(f"{CACHE}/rank{rank}/win{i:06d}_{y:02d}.npy", x)
    feats.append(x)
    labels.append(y)
    if (i + 1) % 100 == 0:
        print(f"[rank{rank}] featurised {i + 1}/{N_WINDOWS} windows", flush=True)
dist.barrier()
print(f"[rank{rank}] feature cache complete", flush=True)

X, Y = torch.from_numpy(np.stack(feats)), torch.tensor(labels)
model = DDP(nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 20)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(5):
    perm = torch.randperm(len(X))
    for b in range(0, len(X), 50):
        idx = perm[b:b + 50]
        loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"[rank{rank}] epoch {epoch} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
