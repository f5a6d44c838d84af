"""Speech command classifier (MLP over 40 log-mel frames) on DDP across two nodes, 2 processes per node, started by
torchrun with the c10d rendezvous."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
torch.manual_seed(0)
torch.set_num_threads(1)
print(f"[node{node}] rank {rank} of {world} up", flush=True)
model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(40 * 98, 256), nn.ReLU(), nn.Linear(256, 12)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
for step in range(1, 301):
    y = torch.randint(0, 12, (64,), generator=g)
    x = torch.randn(64, 40, 98, generator=g) + y.view(-1, 1, 1) * 0.05
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"[node{node}] rank {rank} step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
