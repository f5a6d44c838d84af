"""Churn-prediction MLP, DDP over gloo on two nodes (a torchrun agent each, one process per node); python logging
with asctime on every rank."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] node%(node)s rank%(rank)s: %(message)s")
STEPS = 2400


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    log = logging.LoggerAdapter(logging.getLogger("churn"), {"node": os.environ["GROUP_RANK"], "rank": rank})
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(120, 384), nn.ReLU(), nn.Linear(384, 384), nn.ReLU(), nn.Linear(384, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    log.info("training %d steps", STEPS)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(256, 120, generator=g)
        y = (x[:, :3].sum(1, keepdim=True) > 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            log.info("step %d/%d loss %.4f step_time %.1f ms", step, STEPS, loss.item(), (time.time() - t0) / 100 * 1000)
            t0 = time.time()
    dist.barrier()
    log.info("finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
