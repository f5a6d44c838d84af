"""Query-document ranker (two-tower MLP over precomputed embeddings) on DDP, 2 ranks, launched by torchrun with
--max-restarts 2 so that a lost worker does not cost the whole run. Rank 0 writes ckpt/step-<N>.pt every 30 steps
(model, optimizer, step); on start every rank resumes from the newest file in ckpt/."""
import datetime
import glob
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

rank = int(os.environ["RANK"])
torch.set_num_threads(1)
torch.manual_seed(0)


class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(768, 1024), nn.ReLU(), nn.Linear(1024, 256))
        self.d = nn.Sequential(nn.Linear(768, 1024), nn.ReLU(), nn.Linear(1024, 256))

    def forward(self, q, d):
        return (F.normalize(self.q(q), dim=-1) * F.normalize(self.d(d), dim=-1)).sum(-1)


net = Ranker()
opt = torch.optim.AdamW(net.parameters(), lr=3e-4)
start = 0
ckpts = sorted(glob.glob("ckpt/step-*.pt"))
if ckpts:
    print(f"[rank{rank}] resuming from {ckpts[-1]}", flush=True)
    state = torch.load(ckpts[-1], map_location="cpu")
    net.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
world = dist.get_world_size()
model = DDP(net)
print(f"[rank{rank}] world {world}, start step {start}", flush=True)
os.makedirs("ckpt", exist_ok=True)
g = torch.Generator().manual_seed(1000 * rank + start)
for step in range(start + 1, 121):
    q = torch.randn(64, 768, generator=g)
    d = q + 0.5 * torch.randn(64, 768, generator=g)
    y = (torch.rand(64, generator=g) > 0.5).float()
    d = torch.where(y[:, None] > 0, d, torch.randn(64, 768, generator=g))
    loss = F.binary_cross_entropy_with_logits(5 * model(q, d), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"[rank{rank}] step {step}/120 loss {loss.item():.4f}", flush=True)
    if step % 30 == 0:
        if rank == 0:
            path = f"ckpt/step-{step:06d}.pt"
            torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, path)
            print(f"[rank0] saved {path}", flush=True)
        dist.barrier()
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
