"""Demand-forecasting model (GRU over 28 days of sales), DDP over gloo, started with torch.multiprocessing.spawn.
Rank 0 evaluates on the hold-out stores and keeps the best checkpoint every 100 steps."""
import argparse
import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 64, batch_first=True)
        self.head = nn.Linear(64, 7)

    def forward(self, x):
        return self.head(self.gru(x)[0][:, -1])


def batch(g, n=64):
    x = torch.randn(n, 28, 6, generator=g)
    return x, x[:, -7:, 0] * 0.5 + 0.1


def worker(rank, world, port):
    logging.basicConfig(format=f"%(asctime)s [rank {rank}] %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("forecast")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    model = DDP(Forecaster())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(rank)
    best = float("inf")
    for step in range(1, 601):
        x, y = batch(g)
        loss = nn.functional.l1_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info(f"step {step}/600 train_mae {loss.item():.4f}")
        if step % 100 == 0:
            if rank == 0:
                model.eval()
                with torch.no_grad():
                    hx, hy = batch(torch.Generator().manual_seed(99), 512)
                    mae = nn.functional.l1_loss(model.module(hx), hy).item()
                model.train()
                log.info(f"step {step} holdout_mae {mae:.4f} (best {best:.4f})")
                if mae < best:
                    best = mae
                    torch.save(model.module.state_dict(), "forecaster_best.pt")
                    log.info("saved forecaster_best.pt")
                dist.barrier()
    log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=29500)
    a = p.parse_args()
    mp.spawn(worker, args=(a.nprocs, a.port), nprocs=a.nprocs)
