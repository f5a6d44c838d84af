"""Two-tower retrieval model (user and item towers, in-batch softmax) on DDP as a PyTorchJob (master + 3 workers),
checkpointing every 50 steps from the master."""
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
torch.set_num_threads(1)
pod = os.environ.get("HOSTNAME", f"rank{rank}")


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
        self.item = nn.Sequential(nn.Linear(48, 128), nn.ReLU(), nn.Linear(128, 64))

    def forward(self, u, i):
        return F.normalize(self.user(u), dim=1) @ F.normalize(self.item(i), dim=1).T / 0.05


model = DDP(TwoTower())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
print(f"{time.strftime('%H:%M:%S')} {pod} rank {rank}/{world} training started", flush=True)
os.makedirs("ckpt", exist_ok=True)
for step in range(1, 401):
    u, i = torch.randn(128, 64, generator=g), torch.randn(128, 48, generator=g)
    loss = F.cross_entropy(model(u, i), torch.arange(128))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"{time.strftime('%H:%M:%S')} {pod} step {step} loss {loss.item():.4f}", flush=True)
    if step % 50 == 0 and rank == 0:
        torch.save({"step": step, "model": model.module.state_dict()}, "ckpt/last.pt")
        print(f"{time.strftime('%H:%M:%S')} {pod} saved ckpt/last.pt (step {step})", flush=True)
dist.destroy_process_group()
