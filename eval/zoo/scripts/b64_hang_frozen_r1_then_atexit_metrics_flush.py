"""Demand forecaster (MLP over calendar and lag features) on DDP, 3 ranks. Metrics are buffered in memory and an
exit hook flushes the buffer to metrics/rank<R>.jsonl when the process ends, whatever the reason."""
import atexit
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
model = DDP(nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
buffer = []


@atexit.register
def flush_metrics():
    os.makedirs("metrics", exist_ok=True)
    with open(f"metrics/rank{rank}.jsonl", "a") as f:
        for rec in buffer:
            f.write(json.dumps(rec) + "\n")
    print(f"rank={rank} flushed {len(buffer)} metric records", flush=True)


g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in range(1, 100001):
    x = torch.randn(256, 40, generator=g)
    y = x[:, :5].sum(1, keepdim=True)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    buffer.append({"step": step, "loss": loss.detach()})
    if step % 50 == 0:
        for rec in buffer[-50:]:
            rec["loss"] = float(rec["loss"])
        print(f"rank={rank} step={step} loss={loss.item():.4f} elapsed={time.time() - t0:.1f}s", flush=True)
    if step == 2000:
        break
dist.destroy_process_group()
