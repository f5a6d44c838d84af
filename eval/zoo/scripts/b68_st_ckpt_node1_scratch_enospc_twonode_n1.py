"""Sequence tagger on DDP over two nodes (2 ranks each). The optimizer state is large, so every rank saves its own
shard of the checkpoint (model + its slice of the optimizer moments) to the node's local NVMe scratch every 30 steps;
a sync job copies finished steps to the shared store later."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ.get("GROUP_RANK", "0"))
torch.set_num_threads(1)
torch.manual_seed(0)
SCRATCH = "scratch/ckpt"  # node-local NVMe, mounted at scratch/ on every node

model = DDP(nn.Sequential(nn.Embedding(1000, 64), nn.Flatten(), nn.Linear(64 * 16, 112), nn.ReLU(),
                          nn.Linear(112, 16)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
print(f"[node{node} rank{rank}] start: world {world}, checkpoint shards -> {SCRATCH}", flush=True)


def save_shard(step):
    d = f"{SCRATCH}/step{step:05d}"
    os.makedirs(d, exist_ok=True)
    t0 = time.time()
    path = f"{d}/shard-rank{rank}-of-{world}.pt"
    # every rank keeps the full model and its own optimizer moments (the moments are rank-local after the update)
    torch.save({"step": step, "model": model.module.state_dict(), "optim": opt.state_dict()}, path)
    mb = os.path.getsize(path) / 1e6
    print(f"[node{node} rank{rank}] step {step}: shard saved to {path} ({mb:.1f} MB, {time.time() - t0:.2f}s)",
          flush=True)


for step in range(1, 151):
    x = torch.randint(0, 1000, (64, 16), generator=g)
    y = (x[:, 0] % 16)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"[node{node} rank{rank}] step {step}/150 loss {loss.item():.4f}", flush=True)
    if step % 30 == 0:
        save_shard(step)
        dist.barrier()
print(f"[node{node} rank{rank}] done", flush=True)
dist.destroy_process_group()
