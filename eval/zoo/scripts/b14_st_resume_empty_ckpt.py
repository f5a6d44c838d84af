"""Masked-patch autoencoder on image patches, DDP over gloo, 2 ranks. Auto-resumes from checkpoints/last.pt when
it exists (the job is requeued by the scheduler after node failures)."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("mae")
CKPT = os.path.join("checkpoints", "last.pt")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s | rank {rank} | %(levelname)s | %(message)s")
    model = nn.Sequential(nn.Linear(192, 96), nn.GELU(), nn.Linear(96, 192))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    if os.path.exists(CKPT):
        log.info("resuming from %s", CKPT)
        state = torch.load(CKPT, map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        log.info("resumed at step %d", start)
    model = DDP(model)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(start + 1, start + 401):
        x = torch.randn(128, 192, generator=g)
        mask = (torch.rand(128, 192, generator=g) < 0.75).float()
        loss = ((model(x * (1 - mask)) - x) ** 2 * mask).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.4f %.1f ms/step", step, loss.item(), (time.time() - t0) * 20)
            t0 = time.time()
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, CKPT)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
