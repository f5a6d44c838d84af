"""Two-tower recommender (user/item embeddings + MLP) on DDP, 3 processes. Every 60 steps rank 0 writes a checkpoint
and then uploads it to the team's object store (HTTP PUT to the store's gateway) before it continues training."""
import datetime
import os
import time
import urllib.request

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

STORE = os.environ.get("CKPT_STORE_URL", "http://127.0.0.1:9000/ckpt-bucket")
STEPS, SAVE_EVERY = 240, 60

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)


class TwoTower(nn.Module):
    def __init__(self, users=20_000, items=6_000, d=48):
        super().__init__()
        self.u, self.i = nn.Embedding(users, d), nn.Embedding(items, d)
        self.mlp = nn.Sequential(nn.Linear(2 * d, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, u, i):
        return self.mlp(torch.cat([self.u(u), self.i(i)], 1)).squeeze(1)


model = DDP(TwoTower())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
os.makedirs("checkpoints", exist_ok=True)


def upload(path):
    size = os.path.getsize(path)
    url = f"{STORE}/{os.path.basename(path)}"
    print(f"[rank0] uploading {path} ({size / 2**20:.1f} MiB) to {url}", flush=True)
    t = time.time()
    with open(path, "rb") as f:
        req = urllib.request.Request(url, data=f, method="PUT",
                                     headers={"Content-Length": str(size), "Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(req) as resp:
            resp.read()
    print(f"[rank0] upload done in {time.time() - t:.1f}s", flush=True)


t0 = time.time()
for step in range(1, STEPS + 1):
    u = torch.randint(0, 20_000, (256,), generator=g)
    i = torch.randint(0, 6_000, (256,), generator=g)
    y = ((u + i) % 7 == 0).float()
    loss = F.binary_cross_entropy_with_logits(model(u, i), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"[rank{rank}] step {step}/{STEPS} loss {loss.item():.4f} {1000 * (time.time() - t0) / 20:.0f} ms/step",
              flush=True)
        t0 = time.time()
    if step % SAVE_EVERY == 0 and rank == 0:
        path = f"checkpoints/twotower_step{step:05d}.pt"
        torch.save({"model": model.module.state_dict(), "step": step}, path)
        print(f"[rank0] saved {path}", flush=True)
        upload(path)
print(f"[rank{rank}] training finished", flush=True)
dist.destroy_process_group()
