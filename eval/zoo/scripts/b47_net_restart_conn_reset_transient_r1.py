"""Image-feature classifier (MLP on precomputed 512-d embeddings) on DDP, 2 ranks, launched by torchrun with
--max-restarts 1; rank 0 saves ckpt/last.pt every 50 steps and a restarted attempt resumes from it."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
torch.set_num_threads(1)
print(f"[rank{rank}] attempt {attempt} started (world {world})", flush=True)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 100)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
start = 0
if os.path.exists("ckpt/last.pt"):
    ck = torch.load("ckpt/last.pt")
    model.module.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    start = ck["step"]
    print(f"[rank{rank}] resumed from ckpt/last.pt at step {start}", flush=True)
centers = torch.randn(100, 512, generator=torch.Generator().manual_seed(3))
g = torch.Generator().manual_seed(1000 * attempt + rank)
t0 = time.time()
for step in range(start + 1, 301):
    y = torch.randint(0, 100, (128,), generator=g)
    x = centers[y] + torch.randn(128, 512, generator=g)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"[rank{rank}] step {step}/300 loss {loss.item():.4f} {1000 * (time.time() - t0) / 20:.1f} ms/step",
              flush=True)
        t0 = time.time()
    if step % 50 == 0 and rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, "ckpt/last.pt")
        print(f"[rank0] step {step}: saved ckpt/last.pt", flush=True)
print(f"[rank{rank}] training finished", flush=True)
dist.destroy_process_group()
