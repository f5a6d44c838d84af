"""Audio-tagging CNN trained data-parallel on 3 workers (hand-rolled DDP, one flat gradient all-reduce per step).
Every rank prints its own progress line and appends its step timing to logs/timing-rank<R>.jsonl for the team's
dashboard. The heavy part of each step runs on the accelerator (simgpu69.kernels: this host has none, the call takes
the kernels' time on the GPU as the node reports it)."""
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

EPOCH_BATCHES, BATCH, KERNELS_S, WIRE_S = 200, 32, 0.18, 0.02
model = nn.Sequential(nn.Conv1d(64, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool1d(1), nn.Flatten(),
                      nn.Linear(32, 50))
params = list(model.parameters())
for p in params:
    dist.broadcast(p.data, 0)
opt = torch.optim.AdamW(params, lr=2e-3)
g = torch.Generator().manual_seed(300 + rank)
os.makedirs("logs", exist_ok=True)
feed = open(f"logs/timing-rank{rank}.jsonl", "a")

print(f"rank {rank} | audioset-tagger | {sum(p.numel() for p in params):,} params | {EPOCH_BATCHES} batches/epoch",
      flush=True)
for b in range(1, EPOCH_BATCHES + 1):
    t0 = time.time()
    x = torch.randn(BATCH, 64, 100, generator=g)
    y = (torch.rand(BATCH, 50, generator=g) < 0.05).float()
    t1 = time.time()
    loss = F.binary_cross_entropy_with_logits(model(x), y)
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
    feed.write(json.dumps({"rank": rank, "node": "node0", "step": b, "start": round(t0, 4), "end": round(t4, 4),
                           "compute_s": round((t2 - t1) + (t4 - t3), 4), "comm_s": round(t3 - t2, 4),
                           "data_s": round(t1 - t0, 4)}) + "\n")
    feed.flush()
    print(f"rank {rank} | epoch 0 | batch {b}/{EPOCH_BATCHES} | loss {loss.item():.4f} | {(t4 - t0) * 1000:.1f} ms/batch",
          flush=True)

dist.barrier()
print(f"rank {rank} | epoch 0 done", flush=True)
dist.destroy_process_group()
