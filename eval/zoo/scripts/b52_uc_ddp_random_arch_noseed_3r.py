"""Random architecture search, one trial per job: each job samples a depth and width for the tabular model and
trains it with DDP for a few epochs; the trial's config and score are appended to trials.jsonl."""
import datetime
import json
import random

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)

SPACE = {"depth": [2, 3, 4, 5], "width": [64, 128, 256], "dropout": [0.0, 0.1, 0.2]}
trial = {k: random.choice(v) for k, v in SPACE.items()}
print(f"rank {rank}: trial {trial}", flush=True)

layers, d = [], 40
for _ in range(trial["depth"]):
    layers += [nn.Linear(d, trial["width"]), nn.ReLU(), nn.Dropout(trial["dropout"])]
    d = trial["width"]
layers.append(nn.Linear(d, 1))
torch.manual_seed(0)
model = DDP(nn.Sequential(*layers))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
for epoch in range(3):
    for it in range(60):
        x = torch.randn(128, 40, generator=g)
        y = (x[:, :5].sum(1, keepdim=True) > 0).float()
        loss = F.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {rank} epoch {epoch} loss {loss.item():.4f}", flush=True)
if rank == 0:
    with open("trials.jsonl", "a") as f:
        f.write(json.dumps({**trial, "loss": loss.item()}) + "\n")
dist.destroy_process_group()
