"""Defect-detection CNN on 32x32 grayscale patches, DDP. --sync-bn converts every BatchNorm to SyncBatchNorm (the
GPU recipe uses it for its small per-GPU batches); --backend picks the process-group backend."""
import argparse
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--backend", default="gloo")
p.add_argument("--sync-bn", action="store_true")
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--steps", type=int, default=200)
args = p.parse_args()

dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 8 * 8, 2))
if args.sync_bn:
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    print(f"rank {rank}: BatchNorm -> SyncBatchNorm", flush=True)
model = DDP(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(rank)
for step in range(args.steps):
    x = torch.randn(args.batch_size, 1, 32, 32, generator=g)
    y = torch.randint(0, 2, (args.batch_size,), generator=g)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
