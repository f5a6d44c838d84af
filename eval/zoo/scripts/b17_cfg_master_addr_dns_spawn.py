"""Keyword-spotting model, torch.multiprocessing.spawn, env:// rendezvous. Copied from the cluster repo,
where the job spec sets MASTER_ADDR; the script falls back to the training head's name."""
import argparse
import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

os.environ.setdefault("MASTER_ADDR", "trainer-head-0.ml.corp.internal")
os.environ.setdefault("MASTER_PORT", "29500")


def setup_logging(rank):
    logging.basicConfig(format=f"%(asctime)s [rank {rank}] %(levelname)s %(message)s", level=logging.INFO)
    return logging.getLogger("kws")


def worker(rank, world, args):
    log = setup_logging(rank)
    log.info(f"joining process group at {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}")
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    model = DDP(nn.Sequential(nn.Conv1d(40, 64, 3), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                              nn.Linear(64, 12)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(1, args.steps + 1):
        x, y = torch.randn(32, 40, 98), torch.randint(0, 12, (32,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info(f"step {step} loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs)
