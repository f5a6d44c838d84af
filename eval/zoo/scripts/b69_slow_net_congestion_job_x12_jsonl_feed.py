"""Two-tower recommendation model trained data-parallel on 3 workers. Gradients are averaged by the team's comm
wrapper (a gloo all-reduce, then the wire time of the transfer across the fabric: simgpu69.wire stands in for the
NIC). Every rank writes one JSON record per step to stdout for the log shipper and its step timing to
logs/timing-rank<R>.jsonl. The heavy part of each step runs on the accelerator (simgpu69.kernels)."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu69

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)

STEPS, BATCH, KERNELS_S, WIRE_S = 200, 128, 0.16, 0.04
user_tower = nn.Sequential(nn.Linear(40, 64), nn.ReLU(), nn.Linear(64, 16))
item_tower = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 16))
params = list(user_tower.parameters()) + list(item_tower.parameters())
for p in params:
    dist.broadcast(p.data, 0)
opt = torch.optim.Adagrad(params, lr=0.05)
g = torch.Generator().manual_seed(11 + rank)
os.makedirs("logs", exist_ok=True)
feed = open(f"logs/timing-rank{rank}.jsonl", "a")


class GradSync:
    """All-reduce of the flat gradients: the collective, then the wire time across the fabric."""

    def __init__(self, params):
        self.params = params

    def __call__(self):
        flat = torch.cat([p.grad.flatten() for p in self.params])
        dist.all_reduce(flat)
        simgpu69.wire(WIRE_S, f"nic{rank}")
        flat /= world
        off = 0
        for p in self.params:
            p.grad.copy_(flat[off:off + p.numel()].view_as(p))
            off += p.numel()


sync = GradSync(params)
for step in range(1, STEPS + 1):
    t0 = time.time()
    u = torch.randn(BATCH, 40, generator=g)
    i = torch.randn(BATCH, 24, generator=g)
    y = ((u[:, 0] + i[:, 0]) > 0).float()
    t1 = time.time()
    logit = (user_tower(u) * item_tower(i)).sum(-1)
    loss = F.binary_cross_entropy_with_logits(logit, y)
    opt.zero_grad()
    loss.backward()
    simgpu69.kernels(KERNELS_S, f"gpu{rank}")
    t2 = time.time()
    sync()
    t3 = time.time()
    opt.step()
    t4 = time.time()
    feed.write(json.dumps({"rank": rank, "node": "node0", "step": step, "start": round(t0, 4), "end": round(t4, 4),
                           "compute_s": round((t2 - t1) + (t4 - t3), 4), "comm_s": round(t3 - t2, 4),
                           "data_s": round(t1 - t0, 4)}) + "\n")
    feed.flush()
    print(json.dumps({"ts": round(t4, 3), "rank": rank, "step": step, "loss": round(loss.item(), 4),
                      "step_ms": round((t4 - t0) * 1000, 1), "fwd_bwd_ms": round((t2 - t1) * 1000, 1),
                      "sync_ms": round((t3 - t2) * 1000, 1)}), flush=True)

dist.barrier()
print(json.dumps({"ts": round(time.time(), 3), "rank": rank, "event": "train_end", "steps": STEPS}), flush=True)
dist.destroy_process_group()
