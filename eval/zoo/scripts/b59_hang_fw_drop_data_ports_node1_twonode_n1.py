"""Tabular churn model (MLP, 1.1M parameters) on DDP across two nodes x 2 ranks; logs one line per rank every 20 steps."""
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
node = os.environ.get("GROUP_RANK", "0")
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(96, 512), nn.ReLU(), nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512),
                          nn.ReLU(), nn.Linear(512, 2)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(100 + rank)
last = time.time()
for step in range(1, 601):
    x = torch.randn(128, 96, generator=g)
    y = (x[:, :8].sum(1) > 0).long()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        now = time.time()
        print(f"node={node} rank={rank} step={step}/600 loss={loss.item():.4f} step_ms={(now - last) * 50:.1f}", flush=True)
        last = now
print(f"node={node} rank={rank} done", flush=True)
dist.destroy_process_group()
