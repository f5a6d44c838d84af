"""Speech-command classifier (conv front end + MLP over log-mel frames) trained data-parallel on 3 workers. The
heavy part of each step runs on the accelerator (simgpu.kernels: this host has none, the call takes the kernels'
time); the gradients are averaged with one flat all-reduce. Every rank prints one line per step and appends its
step timing to logs/timing-rank<R>.jsonl for the team's dashboard."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
node = f"node{os.environ.get('GROUP_RANK', '0')}"
torch.set_num_threads(1)
torch.manual_seed(0)

model = nn.Sequential(nn.Conv1d(40, 32, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                      nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 12))
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.AdamW(params, lr=3e-3)
g = torch.Generator().manual_seed(1000 + rank)
STEPS, BATCH, KERNELS_S = 200, 32, 0.18
os.makedirs("logs", exist_ok=True)
feed = open(f"logs/timing-rank{rank}.jsonl", "a")
print(f"[rank{rank}] kws trainer: world {world}, batch {BATCH}, {sum(p.numel() for p in params):,} params", flush=True)

for step in range(1, STEPS + 1):
    t0 = time.time()
    y = torch.randint(0, 12, (BATCH,), generator=g)
    x = torch.randn(BATCH, 40, 98, generator=g) * 0.5
    x[torch.arange(BATCH), y * 3] += 1.0
    t1 = time.time()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    simgpu.kernels(KERNELS_S, f"gpu{rank}")
    t2 = time.time()
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    t3 = time.time()
    opt.step()
    t4 = time.time()
    feed.write(json.dumps({"rank": rank, "node": node, "step": step, "start": round(t0, 4), "end": round(t4, 4),
                           "compute_s": round((t2 - t1) + (t4 - t3), 4), "comm_s": round(t3 - t2, 4),
                           "data_s": round(t1 - t0, 4)}) + "\n")
    feed.flush()
    print(f"[rank{rank}] step {step} | loss {loss.item():.2f} | {t4 - t0:.3f}s/it", flush=True)

dist.barrier()
print(f"[rank{rank}] done: {STEPS} steps", flush=True)
dist.destroy_process_group()
