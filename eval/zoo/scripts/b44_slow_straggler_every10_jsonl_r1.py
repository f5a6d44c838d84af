"""Speech-command classifier (small CNN on log-mel frames) on DDP, 2 ranks; every rank writes one JSON line per
step to stdout (the cluster's log collector parses them): time, rank, step, loss and the step time in ms."""
import datetime
import json
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 12)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(rank)
STEPS = 300
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    x = torch.randn(32, 1, 40, 64, generator=g)
    y = torch.randint(0, 12, (32,), generator=g)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ms = 1000 * (time.perf_counter() - t0)
    print(json.dumps({"ts": round(time.time(), 3), "rank": rank, "step": step, "loss": round(loss.item(), 4),
                      "step_ms": round(ms, 1)}), flush=True)
print(json.dumps({"ts": round(time.time(), 3), "rank": rank, "event": "train_end", "steps": STEPS}), flush=True)
dist.barrier()
dist.destroy_process_group()
