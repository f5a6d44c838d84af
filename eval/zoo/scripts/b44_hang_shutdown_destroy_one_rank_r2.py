"""Churn model (MLP over account features) on DDP, 3 ranks. After training each rank evaluates its test shard and
the losses are summed; the last rank also exports the model for the scoring service (TorchScript, with int8 dynamic
quantization checked on a calibration set)."""
import datetime
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
EXPORT_RANK = world - 1
torch.set_num_threads(1)
g = torch.Generator().manual_seed(rank)
X = torch.randn(12000, 48, generator=g)
Y = (X[:, :6].sum(1) + 0.5 * torch.randn(12000, generator=g) > 0).long()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(48, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
STEPS = 200
t0 = time.time()
for step in range(1, STEPS + 1):
    idx = torch.randint(0, 10000, (64,), generator=g)
    loss = F.cross_entropy(model(X[idx]), Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"rank {rank} | step {step}/{STEPS} | loss {loss.item():.4f} | {1000 * (time.time() - t0) / 25:.1f} ms/step",
              flush=True)
        t0 = time.time()
print(f"rank {rank} | training finished", flush=True)

if rank == EXPORT_RANK:
    # the export needs no communication: free the process group first
    dist.destroy_process_group()
    print(f"rank {rank} | exporting model (int8 dynamic quantization, calibration on 200k rows)", flush=True)
    q = torch.ao.quantization.quantize_dynamic(model.module, {nn.Linear}, dtype=torch.qint8)
    calib = torch.randn(200000, 48, generator=g)
    with torch.no_grad():
        for _ in range(12):
            for k in range(0, len(calib), 4096):
                ref, got = model.module(calib[k:k + 4096]), q(calib[k:k + 4096])
    torch.jit.save(torch.jit.script(q), "churn_int8.pt")
    print(f"rank {rank} | exported churn_int8.pt", flush=True)
    sys.exit(0)

with torch.no_grad():
    test_loss = F.cross_entropy(model(X[10000:]), Y[10000:], reduction="sum")
stats = torch.stack([test_loss, torch.tensor(2000.0)])
dist.all_reduce(stats)
if rank == 0:
    print(f"rank 0 | test loss {stats[0].item() / stats[1].item():.4f}", flush=True)
dist.destroy_process_group()
