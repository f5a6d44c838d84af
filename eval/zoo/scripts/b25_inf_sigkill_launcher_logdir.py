"""Image-tagging model on pre-extracted CNN features (multi-label MLP), DDP over gloo; python logging with asctime and
the rank, every 25 steps; a checkpoint every 200 steps."""
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("tagger")
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(2048, 1024), nn.ReLU(), nn.Linear(1024, 512)))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    g = torch.Generator().manual_seed(rank)
    os.makedirs("ckpt", exist_ok=True)
    t0 = time.time()
    for step in range(1, 1201):
        x = torch.randn(64, 2048, generator=g)
        y = (torch.rand(64, 512, generator=g) < 0.02).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d/1200 loss %.4f %.1f samples/s", step, loss.item(), 25 * 64 / (time.time() - t0))
            t0 = time.time()
        if step % 200 == 0 and rank == 0:
            torch.save({"model": model.module.state_dict(), "step": step}, "ckpt/tagger_last.pt")
            log.info("saved ckpt/tagger_last.pt (step %d)", step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
