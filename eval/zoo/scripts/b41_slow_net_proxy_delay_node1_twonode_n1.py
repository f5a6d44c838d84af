"""Session-based recommender trained on batches served by the feature service (HTTP, FEATURE_URL), DDP across two
nodes with one rank each. Prints step and data-fetch times every 20 steps."""
import datetime
import io
import os
import time
import urllib.request

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

URL = os.environ["FEATURE_URL"]
STEPS = 240
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])
print(f"[node{node} rank{rank}] feature service {URL}", flush=True)


def fetch(step):
    with urllib.request.urlopen(f"{URL}/batch?rank={rank}&step={step}") as r:
        z = np.load(io.BytesIO(r.read()))
    return torch.from_numpy(z["items"]).long(), torch.from_numpy(z["target"]).long()


class GRU4Rec(nn.Module):
    def __init__(self, n_items=8000, d=64):
        super().__init__()
        self.emb = nn.Embedding(n_items, d)
        self.gru = nn.GRU(d, 96, batch_first=True)
        self.out = nn.Linear(96, n_items)

    def forward(self, items):
        h, _ = self.gru(self.emb(items))
        return self.out(h[:, -1])


model = DDP(GRU4Rec())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
win_step = win_data = 0.0
for step in range(1, STEPS + 1):
    t0 = time.time()
    items, target = fetch(step)
    t1 = time.time()
    loss = F.cross_entropy(model(items), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    t2 = time.time()
    win_step += t2 - t0
    win_data += t1 - t0
    if step % 20 == 0:
        print(f"[node{node} rank{rank}] step {step}/{STEPS} loss {loss.item():.4f} step_ms {win_step * 50:.1f} "
              f"data_ms {win_data * 50:.1f}", flush=True)
        win_step = win_data = 0.0
print(f"[node{node} rank{rank}] done", flush=True)
dist.destroy_process_group()
