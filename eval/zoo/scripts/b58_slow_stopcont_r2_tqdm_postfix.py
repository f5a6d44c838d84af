"""Tabular fraud model (wide MLP) on 4 processes with hand-rolled data parallelism: each rank computes its gradients,
then one flat all-reduce averages them. Every process shows a tqdm bar with its own phase times in the postfix and
prints a timing line (epoch seconds) every 25 steps."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
for p in model.parameters():
    dist.broadcast(p.data, 0)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
params = list(model.parameters())
g = torch.Generator().manual_seed(rank)
win = {"fb": 0.0, "ar": 0.0, "step": 0.0}
t_prev = time.perf_counter()
bar = tqdm(range(1, 301), desc=f"fraud", mininterval=0.5)
for step in bar:
    t0 = time.perf_counter()
    x = torch.randn(256, 64, generator=g)
    y = (x[:, :8].sum(1, keepdim=True) > 0).float()
    with torch.cuda.amp.autocast(enabled=True):  # recipe from the GPU cluster
        loss = F.binary_cross_entropy_with_logits(model(x), y)
    opt.zero_grad()
    loss.backward()
    t1 = time.perf_counter()
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[off:off + n].view_as(p))
        off += n
    opt.step()
    t2 = time.perf_counter()
    win["fb"] += (t1 - t0) * 1e3
    win["ar"] += (t2 - t1) * 1e3
    win["step"] += (t2 - t_prev) * 1e3
    t_prev = t2
    bar.set_postfix(fwd_bwd=f"{(t1 - t0) * 1e3:.0f}ms", allreduce=f"{(t2 - t1) * 1e3:.0f}ms")
    if step % 25 == 0:
        print(f"{time.time():.3f} rank={rank} step={step} loss={loss.item():.4f} step_ms={win['step'] / 25:.1f} "
              f"fwd_bwd_ms={win['fb'] / 25:.1f} allreduce_ms={win['ar'] / 25:.1f}", flush=True)
        win = {"fb": 0.0, "ar": 0.0, "step": 0.0}
bar.close()
print(f"{time.time():.3f} rank={rank} done", flush=True)
dist.destroy_process_group()
