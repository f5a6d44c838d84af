"""Crop-yield regression (gradient-boosted features into an MLP) on DDP, 3 ranks; the learning rate drops on a
validation plateau. Written against the PyTorch release the cluster had when the project started."""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)

model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
val_x = torch.randn(512, 64, generator=torch.Generator().manual_seed(99))
val_y = val_x[:, :8].sum(1, keepdim=True)


def train_epoch(epoch):
    for it in range(40):
        x = torch.randn(128, 64, generator=g)
        y = x[:, :8].sum(1, keepdim=True) + 0.1 * torch.randn(128, 1, generator=g)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {rank} epoch {epoch} train_mse {loss.item():.4f}", flush=True)


train_epoch(0)  # warm-up epoch at the base LR, then LR on plateau
with torch.no_grad():
    val = F.mse_loss(model(val_x), val_y)
print(f"rank {rank} epoch 0 val_mse {val.item():.4f}", flush=True)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1, verbose=True)
for epoch in range(1, 8):
    train_epoch(epoch)
    with torch.no_grad():
        val = F.mse_loss(model(val_x), val_y)
    sched.step(val)
dist.destroy_process_group()
