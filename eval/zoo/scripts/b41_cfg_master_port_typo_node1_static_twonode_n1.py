"""Click-through-rate model (wide & deep) on DDP across two nodes, 2 ranks per node."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
print(f"[node{os.environ['GROUP_RANK']} rank{rank}] rendezvous at {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
      flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))


class WideDeep(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(50000, 32, mode="sum")
        self.wide = nn.Linear(64, 1)
        self.deep = nn.Sequential(nn.Linear(32 + 64, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, ids, dense):
        e = self.emb(ids)
        return (self.wide(dense) + self.deep(torch.cat([e, dense], 1))).squeeze(1)


model = DDP(WideDeep())
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in range(1, 301):
    ids = torch.randint(0, 50000, (256, 20), generator=g)
    dense = torch.randn(256, 64, generator=g)
    y = (dense[:, 0] > 0).float()
    loss = F.binary_cross_entropy_with_logits(model(ids, dense), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"[rank{rank}] step {step} loss {loss.item():.4f} {(time.time() - t0) * 20:.0f} ms/step", flush=True)
        t0 = time.time()
dist.destroy_process_group()
