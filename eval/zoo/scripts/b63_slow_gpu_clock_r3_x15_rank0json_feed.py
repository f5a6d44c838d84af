"""Click-through-rate ranker (hashed-feature embeddings + MLP tower) trained data-parallel on 4 workers. The tower's
forward/backward runs on the accelerator (simgpu.kernels: the kernels' time on this GPU-less host); one flat
all-reduce of the gradients per step. Only rank 0 writes the metrics stream (one JSON object per step on stdout);
every rank appends its own step timing to logs/timing-rank<R>.jsonl for the cluster's straggler monitor."""
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
FIELDS, HASH, DIM = 12, 4096, 8
model = nn.ModuleDict({"emb": nn.EmbeddingBag(HASH, DIM, mode="sum"),
                       "tower": nn.Sequential(nn.Linear(FIELDS * DIM, 64), nn.ReLU(), nn.Linear(64, 1))})
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.Adagrad(params, lr=0.05)
g = torch.Generator().manual_seed(500 + rank)
STEPS, BATCH, KERNELS_S = 200, 256, 0.15
os.makedirs("logs", exist_ok=True)
feed = open(f"logs/timing-rank{rank}.jsonl", "a")
if rank == 0:
    print(json.dumps({"event": "start", "world_size": world, "global_batch": BATCH * world, "steps": STEPS}), flush=True)

for step in range(1, STEPS + 1):
    t0 = time.time()
    feats = torch.randint(0, HASH, (BATCH * FIELDS, 1), generator=g)
    clicks = (feats.view(BATCH, FIELDS)[:, :2].sum(1) % 5 == 0).float()
    t1 = time.time()
    logit = model["tower"](model["emb"](feats).view(BATCH, FIELDS * DIM)).squeeze(1)
    loss = F.binary_cross_entropy_with_logits(logit, clicks)
    opt.zero_grad()
    loss.backward()
    simgpu.kernels(KERNELS_S, f"gpu{rank}")
    t2 = time.time()
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    t3 = time.time()
    opt.step()
    t4 = time.time()
    feed.write(json.dumps({"rank": rank, "node": node, "step": step, "start": round(t0, 4), "end": round(t4, 4),
                           "compute_s": round((t2 - t1) + (t4 - t3), 4), "comm_s": round(t3 - t2, 4),
                           "data_s": round(t1 - t0, 4)}) + "\n")
    feed.flush()
    if rank == 0:
        print(json.dumps({"step": step, "loss": round(loss.item(), 4), "step_time_s": round(t4 - t0, 4),
                          "samples_per_s": round(BATCH * world / (t4 - t0), 1), "ts": round(t4, 3)}), flush=True)

dist.barrier()
if rank == 0:
    print(json.dumps({"event": "end", "steps": STEPS}), flush=True)
dist.destroy_process_group()
