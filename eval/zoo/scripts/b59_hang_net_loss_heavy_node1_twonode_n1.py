"""Click model for a search ranker (embedding tables + MLP) on DDP across two nodes, 2 ranks each; one JSON record per
rank every 20 steps (the team's log shipper parses them)."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
node = int(os.environ.get("GROUP_RANK", "0"))
torch.set_num_threads(1)
torch.manual_seed(3)


class Clicks(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Embedding(20000, 32)
        self.d = nn.Embedding(50000, 32)
        self.mlp = nn.Sequential(nn.Linear(64 + 16, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, q, d, f):
        return self.mlp(torch.cat([self.q(q), self.d(d), f], 1)).squeeze(1)


model = DDP(Clicks())
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
t = time.time()
for step in range(1, 501):
    q = torch.randint(0, 20000, (256,), generator=g)
    d = torch.randint(0, 50000, (256,), generator=g)
    f = torch.randn(256, 16, generator=g)
    y = ((q + d) % 7 < 2).float()
    loss = F.binary_cross_entropy_with_logits(model(q, d, f), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(json.dumps({"ts": round(time.time(), 3), "node": node, "rank": rank, "step": step, "loss": round(loss.item(), 4),
                          "step_ms": round((time.time() - t) * 50, 1)}), flush=True)
        t = time.time()
dist.destroy_process_group()
