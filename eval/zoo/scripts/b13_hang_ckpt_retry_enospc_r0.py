"""Speech-command classifier (MFCC-like features), DDP over gloo, 3 ranks. Rank 0 keeps a checkpoint every 100
steps; a failed save is retried (the checkpoint volume has transient hiccups) instead of killing a long run."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("kws")
CKPT_DIR = "ckpt"


def save_checkpoint(state, step):
    path = os.path.join(CKPT_DIR, f"step{step:06d}.pt")
    attempt = 0
    while True:
        try:
            torch.save(state, path + ".partial")
            os.replace(path + ".partial", path)
            log.info("saved %s", path)
            return
        except (OSError, RuntimeError) as e:
            attempt += 1
            log.warning("checkpoint save failed (attempt %d): %s; retrying in 5 s", attempt, e)
            time.sleep(5)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s rank{rank} %(message)s")
    g = torch.Generator().manual_seed(rank)
    feats = torch.randn(5000, 40, 20, generator=g)
    labels = (feats[:, :10, :3].mean((1, 2)) > 0).long() + 2 * (feats[:, 20:, 5].mean(1) > 0).long()
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(800, 384), nn.ReLU(), nn.Linear(384, 4)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 601):
        idx = torch.randint(0, len(feats), (32,), generator=g)
        loss = nn.functional.cross_entropy(model(feats[idx]), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d/600 loss %.4f %.1f ms/step", step, loss.item(), (time.time() - t0) * 40)
            t0 = time.time()
        if step % 100 == 0 and rank == 0:
            save_checkpoint({"model": model.module.state_dict(), "step": step}, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
