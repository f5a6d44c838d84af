"""Recommendation two-tower model trained data-parallel on 3 workers. Forward/backward run on the accelerator
(simgpu.kernels: the kernels' time on this GPU-less host); the gradient sync goes through the team's comm wrapper
(a real gloo all-reduce of this small model's gradients, plus the wire time the production model's 1.6 GB gradient
bucket takes on the node's NIC, simgpu.wire). Every rank prints one JSON record per step and appends its step timing
to logs/timing-rank<R>.jsonl."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
node = f"node{os.environ.get('GROUP_RANK', '0')}"
torch.set_num_threads(1)
torch.manual_seed(0)
users, items = nn.EmbeddingBag(3000, 32), nn.EmbeddingBag(3000, 32)
model = nn.ModuleList([users, items])
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.Adagrad(params, lr=0.05)
g = torch.Generator().manual_seed(300 + rank)
STEPS, BATCH, KERNELS_S, BUCKET_WIRE_S = 200, 128, 0.10, 0.05


def sync_gradients():
    """All-reduce the gradients (mean), then the bucket's time on the wire."""
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    simgpu.wire(BUCKET_WIRE_S, f"nic{rank}")


os.makedirs("logs", exist_ok=True)
feed = open(f"logs/timing-rank{rank}.jsonl", "a")
print(json.dumps({"rank": rank, "event": "ready", "world_size": world, "node": node}), flush=True)
for step in range(1, STEPS + 1):
    t0 = time.time()
    u = torch.randint(0, 3000, (BATCH, 6), generator=g)
    i = (u * 7 + torch.randint(0, 3, (BATCH, 6), generator=g)) % 3000
    t1 = time.time()
    su, si = users(u), items(i)
    logits = su @ si.t()
    loss = F.cross_entropy(logits, torch.arange(BATCH))
    opt.zero_grad()
    loss.backward()
    simgpu.kernels(KERNELS_S, f"gpu{rank}")
    t2 = time.time()
    sync_gradients()
    t3 = time.time()
    opt.step()
    t4 = time.time()
    rec = {"rank": rank, "node": node, "step": step, "start": round(t0, 4), "end": round(t4, 4),
           "compute_s": round((t2 - t1) + (t4 - t3), 4), "comm_s": round(t3 - t2, 4), "data_s": round(t1 - t0, 4)}
    feed.write(json.dumps(rec) + "\n")
    feed.flush()
    print(json.dumps({"rank": rank, "step": step, "loss": round(loss.item(), 4), "step_ms": round(1000 * (t4 - t0), 1),
                      "compute_ms": round(1000 * rec["compute_s"], 1), "comm_ms": round(1000 * rec["comm_s"], 1)}),
          flush=True)
dist.barrier()
print(json.dumps({"rank": rank, "event": "done", "steps": STEPS}), flush=True)
dist.destroy_process_group()
