"""Dense retrieval (two-tower MLP, in-batch negatives) on DDP, 2 processes started with torch.multiprocessing.spawn.
After each epoch every rank mines hard negatives and spills its cache to its own local NVMe scratch (/scratch/nvme<R>,
here scratch/nvme<R>); the job checks the free space first and stops the rank if it would not fit."""
import datetime
import logging
import os
import shutil
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("train_retrieval")
CACHE_MB_PER_EPOCH = 48


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(256, 384), nn.ReLU(), nn.Linear(384, 128))
        self.d = nn.Sequential(nn.Linear(256, 384), nn.ReLU(), nn.Linear(384, 128))

    def forward(self, q, d):
        return nn.functional.normalize(self.q(q), dim=1) @ nn.functional.normalize(self.d(d), dim=1).T


def worker(rank, world):
    logging.basicConfig(level=logging.INFO)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=25))
    spill = os.path.join(os.environ.get("SCRATCH_ROOT", "scratch"), f"nvme{rank}")
    log.info("rank %d spill dir %s", rank, spill)
    torch.manual_seed(0)
    model = DDP(TwoTower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    proj = torch.randn(256, 256, generator=torch.Generator().manual_seed(1))
    for epoch in range(4):
        for step in range(60):
            q = torch.randn(128, 256, generator=g)
            d = q @ proj + 0.3 * torch.randn(128, 256, generator=g)
            loss = nn.functional.cross_entropy(model(q, d) / 0.05, torch.arange(128))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and step % 20 == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
        need = CACHE_MB_PER_EPOCH * 1024 * 1024
        free = shutil.disk_usage(spill).free
        if free < need:
            log.error("rank %d: %s has %.1f MiB free, hard-negative cache for epoch %d needs %.1f MiB; stopping",
                      rank, spill, free / 2**20, epoch, need / 2**20)
            sys.exit(3)
        path = os.path.join(spill, f"hardneg-epoch{epoch}-rank{rank}.pt")
        torch.save(torch.randn(need // 4 // 128, 128), path)
        log.info("rank %d epoch %d hard negatives -> %s", rank, epoch, path)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    mp.spawn(worker, args=(2,), nprocs=2)
