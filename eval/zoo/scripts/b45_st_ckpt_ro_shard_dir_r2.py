"""Learning-to-rank model (MLP over query/document features) on DDP, 3 processes; every rank writes its own resume
shard (optimizer state, RNG state, sampler position) into ckpt/<run>/shard-<rank>/ every 100 steps, then all ranks
meet in a barrier before training goes on."""
import datetime
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

RUN_DIR = "ckpt/ranker-0712"
STEPS, SAVE_EVERY = 300, 100

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s %(levelname)s rank{rank} %(name)s - %(message)s")
log = logging.getLogger("ranker")
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(136, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(100 + rank)
shard_dir = os.path.join(RUN_DIR, f"shard-{rank}")
os.makedirs(shard_dir, exist_ok=True)
log.info("world %d, resume shards in %s", world, shard_dir)


def save_shard(step):
    state = {"step": step, "optimizer": opt.state_dict(), "rng": torch.get_rng_state(),
             "gen": g.get_state(), "sampler_pos": step * 64}
    if rank == 0:
        state["model"] = model.module.state_dict()
    path = os.path.join(shard_dir, f"step_{step:06d}.pt")
    torch.save(state, path)
    log.info("saved resume shard %s", path)


t0 = time.time()
for step in range(1, STEPS + 1):
    x = torch.randn(64, 136, generator=g)
    rel = (x[:, :8].sum(1, keepdim=True) > 0).float()
    loss = F.binary_cross_entropy_with_logits(model(x), rel)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        log.info("step %d/%d loss %.4f %.1f ms/step", step, STEPS, loss.item(), 1000 * (time.time() - t0) / 25)
        t0 = time.time()
    if step % SAVE_EVERY == 0:
        save_shard(step)
        dist.barrier()
        if rank == 0:
            log.info("checkpoint step %d complete on all ranks", step)
log.info("done")
dist.destroy_process_group()
