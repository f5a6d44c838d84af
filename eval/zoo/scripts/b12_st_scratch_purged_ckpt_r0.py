"""Speech-command classifier on precomputed log-mel features, DDP over torch.multiprocessing.spawn.

Checkpoints go to the node's scratch area (fast local NVMe), one every 100 steps; rank 0 writes them.
"""
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

SCRATCH = os.environ.get("SCRATCH_DIR", "scratch/kws-run-0412")
CKPT_DIR = os.path.join(SCRATCH, "ckpt")
STEPS, SAVE_EVERY = 400, 100


def setup_logging(rank):
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(message)s")
    return logging.getLogger("kws")


class KWS(nn.Module):
    def __init__(self, n_mels=40, n_cls=12):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_mels, 32, 5, padding=2), nn.ReLU(), nn.Conv1d(32, 64, 3, padding=1),
                                  nn.ReLU(), nn.AdaptiveAvgPool1d(1))
        self.fc = nn.Linear(64, n_cls)

    def forward(self, x):
        return self.fc(self.conv(x).squeeze(-1))


def worker(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", os.environ.get("PORT", "29500"))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    log = setup_logging(rank)
    torch.manual_seed(rank)
    model = DDP(KWS())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    if rank == 0:
        os.makedirs(CKPT_DIR, exist_ok=True)
        log.info(f"checkpoints -> {CKPT_DIR}")
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(16, 40, 49)
        y = torch.randint(0, 12, (16,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info(f"step {step}/{STEPS} loss {loss.item():.4f} {1000 * (time.time() - t0) / 25:.1f} ms/step")
            t0 = time.time()
        if step % SAVE_EVERY == 0:
            if rank == 0:
                path = os.path.join(CKPT_DIR, f"step_{step:06d}.pt")
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                log.info(f"saved checkpoint {path}")
            dist.barrier()
    log.info("training done")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
