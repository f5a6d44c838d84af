"""Speech-command classifier (small 1-D conv net on log-mel frames) on DDP, 3 ranks. Every rank keeps its own resume
shard (model, optimizer, RNG and sampler position) under ckpt/step_<N>/shard_r<R>.pt; on start every rank loads
its shard of the step named in ckpt/LATEST."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)


def build():
    return nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(), nn.Conv1d(64, 64, 5, padding=2), nn.ReLU(),
                         nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12))


model = build()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
step0, pos = 0, 0
if os.path.exists("ckpt/LATEST"):
    tag = open("ckpt/LATEST").read().strip()
    path = f"ckpt/{tag}/shard_r{rank}.pt"
    print(f"rank {rank}: resuming from {path} ({os.path.getsize(path)} bytes)", flush=True)
    shard = torch.load(path, map_location="cpu")
    model.load_state_dict(shard["model"])
    opt.load_state_dict(shard["optimizer"])
    torch.set_rng_state(shard["rng"])
    step0, pos = shard["step"], shard["sampler_pos"]
    print(f"rank {rank}: resumed at step {step0}, sampler position {pos}", flush=True)
model = DDP(model)
for step in range(step0 + 1, step0 + 301):
    x = torch.randn(32, 40, 98)
    y = torch.randint(0, 12, (32,))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"rank {rank}: step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
