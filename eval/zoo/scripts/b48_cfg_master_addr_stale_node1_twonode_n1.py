"""Load forecaster (1-D CNN over 7 days of hourly readings) on DDP across two nodes, 2 processes per node."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

node = int(os.environ["GROUP_RANK"])
print(f"[node{node}] local rank {os.environ['LOCAL_RANK']} (global {os.environ['RANK']}) starting, "
      f"master {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
torch.set_num_threads(1)
model = DDP(nn.Sequential(nn.Conv1d(3, 32, 5, padding=2), nn.ReLU(), nn.Conv1d(32, 32, 5, padding=2), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 24)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
for step in range(1, 301):
    x = torch.randn(64, 3, 168, generator=g)
    y = x[:, 0, -24:] * 0.5
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"[node{node}] rank {rank} step {step} mse {loss.item():.4f}", flush=True)
dist.destroy_process_group()
