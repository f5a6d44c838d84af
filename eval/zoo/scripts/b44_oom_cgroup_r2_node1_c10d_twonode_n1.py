"""Product-title embedding model (char-trigram hashing + MLP) on DDP across two nodes (c10d rendezvous), 2 processes
per node. Each rank keeps the featurized titles it has seen in an in-memory cache (dict) so later epochs skip the
trigram hashing."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
torch.set_num_threads(1)
DIM = 8192
cache: dict[int, torch.Tensor] = {}


def featurize(ids: torch.Tensor) -> torch.Tensor:
    rows = []
    for i in ids.tolist():
        if i not in cache:
            gen = torch.Generator().manual_seed(i)
            v = torch.zeros(DIM)
            v[torch.randint(0, DIM, (40,), generator=gen)] = 1.0
            cache[i] = v
        rows.append(cache[i])
    return torch.stack(rows)


torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(DIM, 256), nn.ReLU(), nn.Linear(256, 128)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
STEPS = 500
print(f"node {node} rank {rank}: start", flush=True)
t0 = time.time()
for step in range(1, STEPS + 1):
    ids = torch.randint(0, 2_000_000, (64,), generator=g) * world + rank
    a = model(featurize(ids))
    b = model(featurize(ids + world * 7))
    loss = F.cross_entropy(a @ b.T / 0.1, torch.arange(64))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"node {node} rank {rank}: step {step}/{STEPS} loss {loss.item():.4f} cache {len(cache)} titles "
              f"{1000 * (time.time() - t0) / 25:.0f} ms/step", flush=True)
        t0 = time.time()
print(f"node {node} rank {rank}: done", flush=True)
dist.destroy_process_group()
