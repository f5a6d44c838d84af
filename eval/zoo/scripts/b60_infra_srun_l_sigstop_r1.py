"""Named-entity tagger (CNN over character embeddings) on DDP, 3 tasks under srun."""
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
torch.set_num_threads(1)
model = DDP(nn.Sequential(nn.Embedding(256, 48), nn.Flatten(), nn.Linear(48 * 32, 128), nn.ReLU(), nn.Linear(128, 9)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in range(1, 601):
    x = torch.randint(0, 256, (64, 32), generator=g)
    y = x[:, 0] % 9
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"[rank {rank}] step {step} loss {loss.item():.4f} elapsed {time.time() - t0:.1f}s", flush=True)
dist.destroy_process_group()
