"""Demand forecaster (MLP over lag features) on DDP. Saves ckpt/last.pt every epoch on rank 0 and resumes from it
with --resume after a preemption."""
import argparse
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--resume", default="")
p.add_argument("--epochs", type=int, default=6)
args = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)


def build_model():
    return nn.Sequential(nn.Linear(28, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))


model = build_model()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
start_epoch = 0
if args.resume:
    ckpt = torch.load(args.resume, map_location="cpu")
    print(f"rank {rank}: resuming from {args.resume} (epoch {ckpt['epoch']}, val_mae {ckpt['val_mae']:.4f})", flush=True)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    start_epoch = ckpt["epoch"] + 1
model = DDP(model)

g = torch.Generator().manual_seed(rank)
for epoch in range(start_epoch, args.epochs):
    for it in range(50):
        x = torch.randn(64, 28, generator=g)
        y = x[:, :7].mean(1, keepdim=True)
        loss = F.l1_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {rank} epoch {epoch} mae {loss.item():.4f}", flush=True)
    if rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch,
                    "val_mae": loss.item()}, "ckpt/last.pt")
dist.destroy_process_group()
