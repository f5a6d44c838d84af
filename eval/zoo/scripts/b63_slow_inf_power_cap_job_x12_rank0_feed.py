"""Tabular fraud model (residual MLP) trained data-parallel on 2 workers. The network's forward/backward runs on
the accelerator (simgpu.kernels: the kernels' time on this GPU-less host); one flat all-reduce of the gradients per
step. Rank 0 prints the progress line; every rank appends its step timing to logs/timing-rank<R>.jsonl."""
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


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x):
        return x + self.fc2(F.relu(self.fc1(x)))


model = nn.Sequential(nn.Linear(30, 64), Block(64), Block(64), nn.Linear(64, 1))
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(20 + rank)
EPOCHS, ITERS, BATCH, KERNELS_S = 1, 200, 128, 0.15
os.makedirs("logs", exist_ok=True)
feed = open(f"logs/timing-rank{rank}.jsonl", "a")
if rank == 0:
    print(f"fraud-mlp: {world} workers, batch {BATCH}/worker, {ITERS} iters/epoch", flush=True)
step = 0
for epoch in range(1, EPOCHS + 1):
    for it in range(1, ITERS + 1):
        step += 1
        t0 = time.time()
        x = torch.randn(BATCH, 30, generator=g)
        y = (x[:, 0] + 0.5 * x[:, 3] > 1.2).float()
        t1 = time.time()
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
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
        if rank == 0:
            print(f"Epoch {epoch} | iter {it}/{ITERS} | loss {loss.item():.4f} | {1000 * (t4 - t0):.1f} ms/iter",
                  flush=True)
dist.barrier()
if rank == 0:
    print("training complete", flush=True)
dist.destroy_process_group()
