"""Intent classifier (bag-of-ngrams embedding + MLP) on DDP across two nodes, 2 processes per node. Every 40 steps the
first process of each node writes a node-local checkpoint to the node's NVMe scratch ($LOCAL_SCRATCH), through a temporary
file renamed into place, so that a restart on the same nodes resumes from local disk."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
local_rank, node = int(os.environ["LOCAL_RANK"]), int(os.environ["GROUP_RANK"])
torch.manual_seed(0)
torch.set_num_threads(1)
ckpt_dir = os.path.join(os.environ["LOCAL_SCRATCH"], "intent-clf")
os.makedirs(ckpt_dir, exist_ok=True)

model = DDP(nn.Sequential(nn.EmbeddingBag(50000, 64), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 40)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
print(f"[node{node}/rank{rank}] local checkpoints -> {ckpt_dir}", flush=True)


def save_local(step):
    tmp = os.path.join(ckpt_dir, f".step{step}.pt.tmp")
    with open(tmp, "wb") as f:
        torch.save({"step": step, "model": model.module.state_dict(), "opt": opt.state_dict()}, f)
    os.replace(tmp, os.path.join(ckpt_dir, "last.pt"))
    print(f"[node{node}/rank{rank}] step {step}: local checkpoint {ckpt_dir}/last.pt", flush=True)


for step in range(1, 301):
    ids = torch.randint(0, 50000, (128, 24), generator=g)
    y = ids[:, 0] % 40
    loss = F.cross_entropy(model(ids), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"[node{node}/rank{rank}] step {step}/300 loss {loss.item():.4f}", flush=True)
    if step % 40 == 0:
        if local_rank == 0:
            save_local(step)
        dist.barrier()
dist.destroy_process_group()
