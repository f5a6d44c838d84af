"""Credit-risk scorer (tabular MLP) with DDP across two nodes, one process per node. --param-dtype selects the
parameter dtype (float64 was used for a gradient-check run)."""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--param-dtype", default="float32", choices=["float32", "float64"])
p.add_argument("--steps", type=int, default=600)
args = p.parse_args()
dtype = getattr(torch, args.param_dtype)

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
node = int(os.environ["GROUP_RANK"])
torch.set_num_threads(1)
print(f"node {node} rank {rank}: params {args.param_dtype}, {args.steps} steps", flush=True)

model = nn.Sequential(nn.Linear(30, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)).to(dtype)
model = DDP(model)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
w = torch.randn(30, generator=torch.Generator().manual_seed(7), dtype=dtype)
t0 = time.time()
for step in range(1, args.steps + 1):
    x = torch.randn(256, 30, generator=g).to(dtype)
    y = ((x @ w) > 0.5).to(dtype)
    loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"node {node} rank {rank}: step {step}/{args.steps} loss {loss.item():.4f} "
              f"{(time.time() - t0) * 20:.1f} ms/step", flush=True)
        t0 = time.time()
print(f"node {node} rank {rank}: done", flush=True)
dist.destroy_process_group()
