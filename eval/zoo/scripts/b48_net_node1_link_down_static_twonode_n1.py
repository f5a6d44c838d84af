"""Listwise learning-to-rank model (query-document MLP scorer, ListNet loss) on DDP across two nodes, 2 processes per
node. Every rank prints its loss and step time every 20 steps."""
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
node = int(os.environ["GROUP_RANK"])
torch.manual_seed(0)
torch.set_num_threads(1)

model = DDP(nn.Sequential(nn.Linear(136, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 1)))
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
g = torch.Generator().manual_seed(1000 + rank)
w_true = torch.randn(136, generator=torch.Generator().manual_seed(7))
print(f"[node{node} rank{rank}] MSLR-style lists: 32 queries x 40 docs per batch, {world} ranks", flush=True)

STEPS = 600
t_last = time.time()
for step in range(1, STEPS + 1):
    feats = torch.randn(32, 40, 136, generator=g)
    rel = (feats @ w_true).div(4).clamp(-3, 3)
    scores = model(feats).squeeze(-1)
    loss = -(F.softmax(rel, dim=1) * F.log_softmax(scores, dim=1)).sum(1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        now = time.time()
        print(f"[node{node} rank{rank}] step {step}/{STEPS} listnet_loss {loss.item():.4f} "
              f"{1000 * (now - t_last) / 20:.1f} ms/step", flush=True)
        t_last = now
dist.barrier()
if rank == 0:
    torch.save(model.module.state_dict(), "ranker.pt")
    print("training done, saved ranker.pt", flush=True)
dist.destroy_process_group()
