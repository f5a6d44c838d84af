"""Churn model (tabular MLP) on DDP, 3 ranks. Resumes from runs/churn/checkpoint_best.pth, written by the same
training code last quarter (model, optimizer, epoch and the best validation AUC so far)."""
import datetime
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
print(f"| distributed init (rank {rank}): env://, world {world}, torch {torch.__version__}", flush=True)
model = nn.Sequential(nn.Linear(30, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
start_epoch, best_auc = 0, 0.0
resume = "runs/churn/checkpoint_best.pth"
if os.path.isfile(resume):
    print(f"=> loading checkpoint '{resume}'", flush=True)
    checkpoint = torch.load(resume, map_location="cpu")
    model.load_state_dict(checkpoint["state_dict"])
    opt.load_state_dict(checkpoint["optimizer"])
    start_epoch, best_auc = checkpoint["epoch"], float(checkpoint["best_auc"])
    print(f"=> loaded checkpoint '{resume}' (epoch {start_epoch}, best auc {best_auc:.4f})", flush=True)
model = DDP(model)
g = torch.Generator().manual_seed(rank)
for epoch in range(start_epoch, start_epoch + 3):
    for it in range(100):
        x = torch.randn(256, 30, generator=g)
        y = (x[:, :3].sum(1) > 0).float()
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"Epoch: [{epoch}] rank {rank} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
