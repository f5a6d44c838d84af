"""Audio-event tagger trained data-parallel on 3 workers. Each rank reads its own shard of pre-computed clip
features (data/shard-<R>.npy) through the shard store client (simgpu.store_read: the node-local cache in front of
the object store, this host's stand-in); forward/backward run on the accelerator (simgpu.kernels: the kernels'
time on this GPU-less host); one flat all-reduce per step. Every rank logs each step with step_time and data_time
and appends its timing to logs/timing-rank<R>.jsonl."""
import datetime
import json
import logging
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
node = f"node{os.environ.get('GROUP_RANK', '0')}"
logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)s | %(name)s | %(message)s")
log = logging.getLogger(f"tagger.rank{rank}")
torch.set_num_threads(1)
torch.manual_seed(0)
feats = np.load(f"data/shard-{rank}.npy", mmap_mode="r")
labels = np.load(f"data/labels-{rank}.npy")
model = nn.Sequential(nn.Linear(64, 96), nn.ReLU(), nn.Linear(96, 16))
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.Adam(params, lr=2e-3)
STEPS, BATCH, KERNELS_S = 200, 32, 0.14
os.makedirs("logs", exist_ok=True)
feed = open(f"logs/timing-rank{rank}.jsonl", "a")
log.info("shard %d: %d clips, world %d, batch %d", rank, len(feats), world, BATCH)


def load_batch(i):
    lo = (i * BATCH) % len(feats)
    simgpu.store_read(f"store{rank}")  # the shard's chunk through the cache / object store
    x = torch.from_numpy(np.array(feats[lo:lo + BATCH]))
    y = torch.from_numpy(labels[lo:lo + BATCH]).long()
    return x, y


for step in range(1, STEPS + 1):
    t0 = time.time()
    x, y = load_batch(step)
    t1 = time.time()
    loss = F.cross_entropy(model(x), y)
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
    log.info("step %d/%d loss=%.4f step_time=%.3fs data_time=%.3fs", step, STEPS, loss.item(), t4 - t0, t1 - t0)
dist.barrier()
log.info("done")
dist.destroy_process_group()
