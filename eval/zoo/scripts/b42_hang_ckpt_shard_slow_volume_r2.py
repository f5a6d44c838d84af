"""Conformer-lite acoustic model, DDP with 3 ranks. Every 60 steps each rank writes its resumable shard
(model, optimizer, RNG, data cursor) to the shared checkpoint volume, crash-safe (tmp file, fsync, rename), then
all ranks meet at a barrier so that nobody runs ahead of an incomplete checkpoint."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
log = logging.getLogger("asr")


class ConvBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.conv = nn.Conv1d(d, d, 15, padding=7, groups=d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff(x)
        x = x + self.conv(x.transpose(1, 2)).transpose(1, 2)
        return self.norm(x)


class AM(nn.Module):
    def __init__(self, d=192, vocab=512):
        super().__init__()
        self.inp = nn.Linear(80, d)
        self.blocks = nn.Sequential(*[ConvBlock(d) for _ in range(4)])
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        return self.out(self.blocks(self.inp(x)))


model = DDP(AM())
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
g = torch.Generator().manual_seed(rank)
ckpt_root = "ckpt"
log.info("%.2fM params, checkpoints to %s every 60 steps", sum(p.numel() for p in model.parameters()) / 1e6, ckpt_root)


def save_shard(step):
    d = os.path.join(ckpt_root, f"step_{step:06d}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"shard_rank{rank}.pt")
    tmp = path + ".tmp"
    t = time.time()
    with open(tmp, "wb") as fh:
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step,
                    "rng": g.get_state()}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    log.info("saved %s (%.1f MB) in %.1fs", path, os.path.getsize(path) / 1e6, time.time() - t)


t0 = time.time()
for step in range(1, 301):
    x = torch.randn(8, 120, 80, generator=g)
    y = torch.randint(0, 512, (8, 120), generator=g)
    loss = F.cross_entropy(model(x).reshape(-1, 512), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        log.info("step %d/300 loss %.4f %.0f ms/step", step, loss.item(), (time.time() - t0) * 50)
        t0 = time.time()
    if step % 60 == 0:
        save_shard(step)
        dist.barrier()
        log.info("checkpoint step_%06d complete on all ranks", step)
log.info("training done")
dist.destroy_process_group()
