"""Regression MLP, DDP (gloo), python logging with timestamps; warmup + cosine LR (logged every 100 steps),
checkpoint every 200 steps by rank 0."""
import logging
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn

TOTAL, WARMUP, BASE_LR = 800, 80, 1e-3


def lr_at(step):
    if step < WARMUP:
        return BASE_LR * step / WARMUP
    return 0.5 * BASE_LR * (1 + math.cos(math.pi * (step - WARMUP) / (TOTAL - WARMUP)))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger(f"train.rank{rank}")
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512),
                                                              nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=BASE_LR)
    w = torch.randn(256)
    os.makedirs("checkpoints", exist_ok=True)
    for step in range(1, TOTAL + 1):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x = torch.randn(64, 256)
        loss = nn.functional.mse_loss(model(x), (x @ w).unsqueeze(1) / 16)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("step %d loss %.5f", step, loss.item())
        if step % 100 == 0 and rank == 0:
            log.info("lr schedule: step %d lr %.3e", step, lr_at(step))
        if step % 200 == 0:
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step},
                           f"checkpoints/step_{step:06d}.pt")
                log.info("saved checkpoints/step_%06d.pt", step)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
