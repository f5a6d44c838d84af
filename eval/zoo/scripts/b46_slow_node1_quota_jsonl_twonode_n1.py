"""Two-tower retrieval model (query and item MLP towers, in-batch softmax) on data parallelism across two nodes, 2
processes per node. Gradients are averaged with one flat all-reduce per step; every rank writes a JSON metrics record
every 20 steps with the window's mean step time and its split into compute and gradient sync."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ.get("GROUP_RANK", "0"))
torch.set_num_threads(1)
torch.manual_seed(0)
tower = lambda: nn.Sequential(nn.Linear(96, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 64))
model = nn.ModuleDict({"query": tower(), "item": tower()})
params = list(model.parameters())
for p in params:
    dist.broadcast(p.data, 0)
opt = torch.optim.Adam(params, lr=1e-3)
g = torch.Generator().manual_seed(rank)
STEPS, WIN = 240, 20
comp = sync = 0.0
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    q = torch.randn(512, 96, generator=g)
    it = q + 0.5 * torch.randn(512, 96, generator=g)
    logits = F.normalize(model["query"](q), dim=1) @ F.normalize(model["item"](it), dim=1).T / 0.05
    loss = F.cross_entropy(logits, torch.arange(512))
    opt.zero_grad()
    loss.backward()
    t1 = time.perf_counter()
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    t2 = time.perf_counter()
    opt.step()
    t3 = time.perf_counter()
    comp += (t1 - t0) + (t3 - t2)
    sync += t2 - t1
    if step % WIN == 0:
        print(json.dumps({"ts": round(time.time(), 3), "node": node, "rank": rank, "step": step,
                          "loss": round(loss.item(), 4), "step_ms": round(1000 * (comp + sync) / WIN, 1),
                          "compute_ms": round(1000 * comp / WIN, 1), "grad_sync_ms": round(1000 * sync / WIN, 1)}),
              flush=True)
        comp = sync = 0.0
dist.barrier()
if rank == 0:
    print(json.dumps({"ts": round(time.time(), 3), "event": "train_end", "steps": STEPS}), flush=True)
dist.destroy_process_group()
