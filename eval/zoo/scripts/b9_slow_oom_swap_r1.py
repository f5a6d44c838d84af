"""Recommendation model; every rank keeps the item-embedding table it was given in memory and looks rows up per batch."""
import datetime
import logging
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger(__name__)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    rng = np.random.default_rng(rank)
    items = rng.standard_normal((400_000, 256), dtype=np.float32)  # 390 MiB frozen item embeddings
    log.info("[rank%d] item table %.0f MiB", rank, items.nbytes / 2**20)
    tower = DDP(nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 64)))
    user = nn.Linear(32, 64)
    opt = torch.optim.Adam(list(tower.parameters()) + list(user.parameters()), lr=1e-3)
    t = time.time()
    for step in range(1, 1501):
        idx = np.sort(rng.integers(0, len(items), 256))
        x = torch.from_numpy(items[idx])
        u = torch.randn(256, 32)
        loss = -nn.functional.logsigmoid((tower(x) * user(u)).sum(1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("[rank%d] step %d/1500 loss %.4f %.1f ms/step", rank, step, loss.item(), (time.time() - t) * 20)
            t = time.time()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
