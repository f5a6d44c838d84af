"""Recommendation model on DDP, 3 ranks. Every 40 steps each rank spills its hard-negative pool (the embeddings it
mined since the last spill) to its node's scratch under the user's directory, for the re-ranking job that reads
them back; rank 0 also keeps the model checkpoint there."""
import datetime
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
SCRATCH = f"/mnt/b68_scratch/node{rank}/mlusr/recs-hn"  # each rank's node-local scratch (one rank per node)
os.makedirs(SCRATCH, exist_ok=True)
model = DDP(nn.Sequential(nn.Linear(96, 256), nn.ReLU(), nn.Linear(256, 128)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
pool = []
for step in range(1, 201):
    u = torch.randn(512, 96, generator=g)
    i = u + 0.2 * torch.randn(512, 96, generator=g)
    zu, zi = model(u), model(i)
    scores = zu @ zi.t()
    loss = F.cross_entropy(scores, torch.arange(512))
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        hard = scores.masked_fill(torch.eye(512, dtype=torch.bool), -1e9).max(1)
        top = hard.values.topk(64).indices  # the 64 users with the hardest negatives this step
        pool.append(zi[hard.indices[top]].numpy().astype(np.float32))
    if step % 10 == 0:
        print(f"[rank{rank}] step {step}/200 loss {loss.item():.4f}", flush=True)
    if step % 40 == 0:
        out = f"{SCRATCH}/hardneg-step{step:04d}-rank{rank}.npy"
        np.save(out, np.concatenate(pool))
        print(f"[rank{rank}] spilled {sum(len(p) for p in pool)} hard negatives -> {out}", flush=True)
        pool = []
        dist.barrier()
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
