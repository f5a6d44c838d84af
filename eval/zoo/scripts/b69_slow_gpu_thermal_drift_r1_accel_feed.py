"""Invoice-field extractor (small transformer encoder + tagging head) trained data-parallel on 3 workers (hand-rolled
DDP, one flat gradient all-reduce per step). Logging goes through the `logging` module on the main process only, as
in the team's accelerate-based scripts; every rank appends its step timing to logs/timing-rank<R>.jsonl. The heavy
part of each step runs on the accelerator (simgpu69.kernels: this host has none, the call takes the kernels' time)."""
import datetime
import json
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu69

logging.basicConfig(level=logging.INFO)
logger = logging.getLogger(__name__)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
is_main = rank == 0
torch.set_num_threads(1)
torch.manual_seed(0)

MAX_STEPS, BATCH, SEQ, KERNELS_S, WIRE_S = 200, 8, 48, 0.16, 0.02
model = nn.Sequential(nn.Embedding(3000, 32), nn.TransformerEncoderLayer(32, 2, 64, batch_first=True, dropout=0.0),
                      nn.Linear(32, 9))
params = list(model.parameters())
for p in params:
    dist.broadcast(p.data, 0)
opt = torch.optim.AdamW(params, lr=5e-4)
g = torch.Generator().manual_seed(50 + rank)
os.makedirs("logs", exist_ok=True)
feed = open(f"logs/timing-rank{rank}.jsonl", "a")
if is_main:
    logger.info("***** Running training *****")
    logger.info("  Num processes = %d, per-device batch size = %d, total steps = %d", world, BATCH, MAX_STEPS)

for step in range(1, MAX_STEPS + 1):
    t0 = time.time()
    ids = torch.randint(0, 3000, (BATCH, SEQ), generator=g)
    tags = ids % 9
    t1 = time.time()
    loss = F.cross_entropy(model(ids).reshape(-1, 9), tags.reshape(-1))
    opt.zero_grad()
    loss.backward()
    simgpu69.kernels(KERNELS_S, f"gpu{rank}")
    t2 = time.time()
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    simgpu69.wire(WIRE_S, f"nic{rank}")
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    t3 = time.time()
    opt.step()
    t4 = time.time()
    feed.write(json.dumps({"rank": rank, "node": "node0", "step": step, "start": round(t0, 4), "end": round(t4, 4),
                           "compute_s": round((t2 - t1) + (t4 - t3), 4), "comm_s": round(t3 - t2, 4),
                           "data_s": round(t1 - t0, 4)}) + "\n")
    feed.flush()
    if is_main:
        logger.info("step %d | loss %.4f | %.2f it/s | step_time %.3f", step, loss.item(), 1 / (t4 - t0), t4 - t0)

dist.barrier()
if is_main:
    logger.info("Training completed. Saving final model to out/invoice-tagger")
dist.destroy_process_group()
