"""Tabular fraud model (MLP over 96 numeric features), DDP over gloo, 3 processes; every rank logs its own
step timing every 25 steps (python logging with asctime)."""
import logging
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

STEPS = 600


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s")
    log = logging.getLogger(__name__)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Linear(96, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    w = torch.randn(96, generator=torch.Generator().manual_seed(42))
    log.info("training %d steps", STEPS)
    t_start = t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(256, 96, generator=g)
        y = ((x @ w) > 1.5).float()
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            dt = (time.time() - t0) / 25
            log.info("step %d/%d loss %.4f step_time %.1f ms throughput %.0f samples/s", step, STEPS, loss.item(),
                     dt * 1000, 256 / dt)
            t0 = time.time()
    log.info("finished %d steps in %.1f s", STEPS, time.time() - t_start)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
