"""Demand-forecast model on DDP, 3 ranks. Rank 0 appends the run's metrics (one JSON line every 10 steps) to the
team's shared results volume (/mnt/b68_results), which the dashboard tails; every rank prints its loss."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(96, 384), nn.ReLU(), nn.Linear(384, 384), nn.ReLU(), nn.Linear(384, 24)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
if rank == 0:
    os.makedirs("/mnt/b68_results/demand-tft-17", exist_ok=True)
    metrics = open("/mnt/b68_results/demand-tft-17/metrics.jsonl", "a", buffering=1)
t_last = time.time()
for step in range(1, 301):
    x = torch.randn(256, 96, generator=g)
    y = x[:, -24:] * 0.5 + 0.1 * torch.randn(256, 24, generator=g)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        dt = (time.time() - t_last) / 10
        t_last = time.time()
        print(f"{datetime.datetime.now():%Y-%m-%d %H:%M:%S} rank {rank} step {step}/300 loss {loss.item():.5f} "
              f"{dt * 1000:.0f} ms/step", flush=True)
        if rank == 0:
            metrics.write(json.dumps({"step": step, "loss": round(loss.item(), 5), "ms_per_step": round(dt * 1000, 1),
                                      "time": time.time()}) + "\n")
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
