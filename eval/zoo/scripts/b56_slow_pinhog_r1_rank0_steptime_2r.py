"""Tabular fraud-score model (residual MLP) on DDP, 2 ranks (the site pins each rank to a core of its own). Rank 0
prints the job's progress every 10 steps: the mean wall time per step over the window (the whole job's pace, since DDP's all-reduce ties the ranks together) and
samples/s over all ranks."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.f = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        return x + self.f(x)


model = DDP(nn.Sequential(nn.Linear(96, 256), Block(256), Block(256), Block(256), nn.Linear(256, 1)))
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
g = torch.Generator().manual_seed(rank)
BATCH, STEPS = 384, 160
if rank == 0:
    print(f"fraud-score training: {world} ranks x batch {BATCH}, {STEPS} steps", flush=True)
t0 = time.time()
for step in range(1, STEPS + 1):
    x = torch.randn(BATCH, 96, generator=g)
    y = (x[:, :6].sum(1) > 0).float()
    loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        dt = (time.time() - t0) / 10
        if rank == 0:
            print(f"[step {step:3d}] loss={loss.item():.4f} | avg {dt * 1000:.1f} ms/it | "
                  f"{BATCH * world / dt:.0f} samples/s (job)", flush=True)
        t0 = time.time()
if rank == 0:
    print("training finished", flush=True)
dist.destroy_process_group()
