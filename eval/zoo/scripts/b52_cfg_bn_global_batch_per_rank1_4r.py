"""Fraud-score MLP with BatchNorm on tabular features, DDP. --global-batch-size is split evenly across the ranks
(the per-rank batch is global // world_size), so the effective batch is the same at any scale."""
import argparse
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--global-batch-size", type=int, default=256)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--lr", type=float, default=1e-3)
args = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
per_rank = args.global_batch_size // world
if rank == 0:
    print(f"world_size={world} global_batch_size={args.global_batch_size} per_rank_batch={per_rank}", flush=True)

x = torch.randn(4096, 30)
y = (x[:, :3].sum(1) > 1.0).float()
ds = TensorDataset(x, y)
loader = DataLoader(ds, batch_size=per_rank, sampler=DistributedSampler(ds, shuffle=True), drop_last=True)
model = DDP(nn.Sequential(nn.Linear(30, 128), nn.BatchNorm1d(128), nn.ReLU(),
                          nn.Linear(128, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 1)))
opt = torch.optim.Adam(model.parameters(), lr=args.lr)
for epoch in range(args.epochs):
    loader.sampler.set_epoch(epoch)
    for it, (xb, yb) in enumerate(loader):
        loss = F.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 20 == 0:
            print(f"rank {rank} epoch {epoch} it {it} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
