"""Product-title tagger (embedding + BiGRU-free MLP over hashed n-grams) with DDP on 2 ranks, torchrun --max-restarts 1
with the c10d rendezvous. Rank 0 checkpoints every 40 steps to the shared checkpoint volume mounted at ckpt/ (written to
ckpt/tmp.pt, then renamed to ckpt/last.pt); every (re)started worker resumes from ckpt/last.pt when it exists."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 160
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
net = nn.Sequential(nn.EmbeddingBag(4096, 128), nn.Linear(128, 1024), nn.ReLU(), nn.Linear(1024, 32))
model = DDP(net)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
start = 0
if os.path.exists("ckpt/last.pt"):
    state = torch.load("ckpt/last.pt")
    net.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
print(f"rank {rank}: restart {os.environ.get('TORCHELASTIC_RESTART_COUNT')}, starting at step {start + 1}", flush=True)
g = torch.Generator().manual_seed(100 * rank + start)
for step in range(start + 1, STEPS + 1):
    x = torch.randint(0, 4096, (128, 24), generator=g)
    y = x[:, 0] % 32
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step}/{STEPS} loss {loss.item():.4f}", flush=True)
    if step % 40 == 0:
        if rank == 0:
            torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "step": step}, "ckpt/tmp.pt")
            os.replace("ckpt/tmp.pt", "ckpt/last.pt")
            print(f"rank 0: checkpoint step {step} -> ckpt/last.pt", flush=True)
        dist.barrier()
print(f"rank {rank}: finished {STEPS} steps", flush=True)
dist.destroy_process_group()
