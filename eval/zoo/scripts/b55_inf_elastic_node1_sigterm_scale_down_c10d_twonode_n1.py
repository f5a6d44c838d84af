"""Fashion-attribute classifier (MLP over precomputed image embeddings) with DDP, written for elastic training on a
pool of preemptible nodes: torchrun --nnodes 1:2 with the c10d rendezvous on every node, so that the job continues on
the node left when the other is taken back. Rank 0 checkpoints every 20 steps (temporary file, then rename); every
(re)started worker resumes from ckpt/last.pt and takes its share of each global batch by its current rank and world."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

GLOBAL_BATCH, STEPS = 192, 150
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(512, 256), nn.GELU(), nn.Linear(256, 24))
model = DDP(net)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
start = 0
if os.path.exists("ckpt/last.pt"):
    state = torch.load("ckpt/last.pt")
    net.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
print(f"[{datetime.datetime.now():%H:%M:%S}] rank {rank} of {world} (node {os.environ.get('GROUP_RANK')}, restart "
      f"{os.environ.get('TORCHELASTIC_RESTART_COUNT')}) resumes at step {start + 1}", flush=True)
per_rank = GLOBAL_BATCH // world
for step in range(start + 1, STEPS + 1):
    g = torch.Generator().manual_seed(step)
    x = torch.randn(GLOBAL_BATCH, 512, generator=g)
    y = x[:, :24].argmax(1)
    x, y = x[rank * per_rank:(rank + 1) * per_rank], y[rank * per_rank:(rank + 1) * per_rank]
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"[{datetime.datetime.now():%H:%M:%S}] rank {rank} of {world} step {step}/{STEPS} loss {loss.item():.4f}",
              flush=True)
    if step % 20 == 0 and rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "step": step}, "ckpt/tmp.pt")
        os.replace("ckpt/tmp.pt", "ckpt/last.pt")
print(f"[{datetime.datetime.now():%H:%M:%S}] rank {rank} of {world}: done", flush=True)
dist.destroy_process_group()
