"""Query-intent encoder trained data-parallel on 2 nodes x 2 workers. Forward/backward run on the accelerator
(simgpu.kernels: the kernels' time on this GPU-less host); the gradient sync is a real gloo all-reduce of this small
model's gradients plus the wire time the production model's gradient bucket takes on the worker's NIC
(simgpu.wire). Every rank prints one line per step with its fwd+bwd and allreduce times."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ.get("GROUP_RANK", "0"))
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.EmbeddingBag(2000, 32), nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 20))
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.AdamW(params, lr=2e-3)
g = torch.Generator().manual_seed(40 + rank)
STEPS, BATCH, KERNELS_S, BUCKET_WIRE_S = 200, 64, 0.10, 0.05
tag = f"[node{node} rank{rank}]"
print(f"{tag} intent encoder up, world {world}", flush=True)
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    q = torch.randint(0, 2000, (BATCH, 10), generator=g)
    y = q[:, 0] % 20
    loss = F.cross_entropy(model(q), y)
    opt.zero_grad()
    loss.backward()
    simgpu.kernels(KERNELS_S, f"gpu{rank}")
    t1 = time.perf_counter()
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    simgpu.wire(BUCKET_WIRE_S, f"nic{rank}")
    t2 = time.perf_counter()
    opt.step()
    t3 = time.perf_counter()
    print(f"{tag} step {step}/{STEPS} | loss {loss.item():.3f} | step {t3 - t0:.3f}s | fwd+bwd {t1 - t0:.3f}s | "
          f"allreduce {t2 - t1:.3f}s", flush=True)
dist.barrier()
print(f"{tag} finished", flush=True)
dist.destroy_process_group()
