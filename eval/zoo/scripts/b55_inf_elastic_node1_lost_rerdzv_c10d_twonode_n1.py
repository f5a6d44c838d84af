"""Sentiment classifier (bag-of-embeddings + MLP) with DDP, written for elastic training: launched on every node with
torchrun --nnodes 1:2 and the c10d rendezvous, so that the job keeps going on the nodes left if one is lost. Rank 0
checkpoints every 20 steps (temporary file, then rename); every (re)started worker resumes from ckpt/last.pt and takes
its share of each global batch of 256 by its current rank and world size."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

GLOBAL_BATCH, STEPS = 256, 160
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.EmbeddingBag(20000, 64), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2)))
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
start = 0
if os.path.exists("ckpt/last.pt"):
    state = torch.load("ckpt/last.pt")
    model.module.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
print(f"rank {rank}/{world} (restart {restart}, host group {os.environ.get('GROUP_RANK')}): starting at step "
      f"{start + 1}", flush=True)
per_rank = GLOBAL_BATCH // world
for step in range(start + 1, STEPS + 1):
    g = torch.Generator().manual_seed(step)
    tokens = torch.randint(0, 20000, (GLOBAL_BATCH, 48), generator=g)
    y = (tokens[:, :8] < 6000).sum(1).gt(2).long()
    x, y = tokens[rank * per_rank:(rank + 1) * per_rank], y[rank * per_rank:(rank + 1) * per_rank]
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank}/{world} step {step}/{STEPS} loss {loss.item():.4f}", flush=True)
    if step % 20 == 0 and rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, "ckpt/tmp.pt")
        os.replace("ckpt/tmp.pt", "ckpt/last.pt")
print(f"rank {rank}/{world}: training finished at step {STEPS}", flush=True)
dist.destroy_process_group()
