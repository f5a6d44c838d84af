"""Keyword-spotting CNN on DDP, elastic launch (c10d rendezvous) across two nodes, 2 workers each."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
tag = f"[{os.environ.get('GROUP_RANK', '?')}/{rank}]"
torch.set_num_threads(1)
torch.manual_seed(5)
model = DDP(nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d((4, 4)), nn.Flatten(), nn.Linear(1024, 35)))
opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
g = torch.Generator().manual_seed(rank)
t = time.time()
for step in range(1, 701):
    x = torch.randn(32, 1, 40, 32, generator=g)
    y = torch.randint(0, 35, (32,), generator=g)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"{tag} step {step:4d}/700  loss {loss.item():.3f}  {(time.time() - t) / 25 * 1000:.0f}ms/step", flush=True)
        t = time.time()
print(f"{tag} done", flush=True)
dist.destroy_process_group()
