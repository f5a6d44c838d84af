"""Product-review sentiment model (EmbeddingBag + MLP) fine-tuned data-parallel on 3 workers with python logging.
Forward/backward of the big encoder runs on the accelerator (simgpu.kernels stands in for its kernels on this
GPU-less host); DDP-style gradient averaging with one all-reduce per step. Every rank logs every step with its
step_time and data_time."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
log = logging.getLogger("train_reviews")
torch.set_num_threads(1)
torch.manual_seed(0)

VOCAB = 5000
model = nn.ModuleDict({"emb": nn.EmbeddingBag(VOCAB, 32), "head": nn.Sequential(nn.Linear(32, 64), nn.ReLU(),
                                                                             nn.Linear(64, 2))})
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.Adam(params, lr=2e-3)
g = torch.Generator().manual_seed(7 + rank)
STEPS, BATCH, KERNELS_S = 200, 64, 0.15
log.info("starting: world_size=%d batch=%d steps=%d", world, BATCH, STEPS)


def next_batch():
    tok = torch.randint(0, VOCAB, (BATCH, 48), generator=g)
    label = (tok[:, :8] < VOCAB // 2).sum(1).gt(4).long()
    return tok, label


for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    tok, label = next_batch()
    t1 = time.perf_counter()
    loss = F.cross_entropy(model["head"](model["emb"](tok)), label)
    opt.zero_grad()
    loss.backward()
    simgpu.kernels(KERNELS_S, f"gpu{rank}")
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    opt.step()
    t2 = time.perf_counter()
    log.info("step=%d loss=%.4f step_time=%.3f data_time=%.4f lr=%.1e", step, loss.item(), t2 - t0, t1 - t0,
             opt.param_groups[0]["lr"])

dist.barrier()
log.info("training finished after %d steps", STEPS)
dist.destroy_process_group()
