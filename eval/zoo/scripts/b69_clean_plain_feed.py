"""Image-quality regressor trained data-parallel on 3 workers (hand-rolled DDP, one flat gradient all-reduce per
step). Every rank prints a short progress line and appends its step timing to logs/timing-rank<R>.jsonl. The heavy
part of each step runs on the accelerator (simgpu69.kernels: this host has none, the call takes the kernels' time)."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu69

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)

STEPS, BATCH, KERNELS_S, WIRE_S = 200, 16, 0.18, 0.02
model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 1))
params = list(model.parameters())
for p in params:
    dist.broadcast(p.data, 0)
opt = torch.optim.Adam(params, lr=1e-3)
g = torch.Generator().manual_seed(900 + rank)
os.makedirs("logs", exist_ok=True)
feed = open(f"logs/timing-rank{rank}.jsonl", "a")

for step in range(1, STEPS + 1):
    t0 = time.time()
    x = torch.rand(BATCH, 3, 24, 24, generator=g)
    y = x.mean(dim=(1, 2, 3)).unsqueeze(1)
    t1 = time.time()
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    simgpu69.kernels(KERNELS_S, f"gpu{rank}")
    t2 = time.time()
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    simgpu69.wire(WIRE_S, f"nic{rank}")
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    t3 = time.time()
    opt.step()
    t4 = time.time()
    feed.write(json.dumps({"rank": rank, "node": "node0", "step": step, "start": round(t0, 4), "end": round(t4, 4),
                           "compute_s": round((t2 - t1) + (t4 - t3), 4), "comm_s": round(t3 - t2, 4),
                           "data_s": round(t1 - t0, 4)}) + "\n")
    feed.flush()
    print(f"[r{rank}] step {step}/{STEPS} loss {loss.item():.5f} ({t4 - t0:.3f} s)", flush=True)

dist.barrier()
print(f"[r{rank}] finished {STEPS} steps", flush=True)
dist.destroy_process_group()
