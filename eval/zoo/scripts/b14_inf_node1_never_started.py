"""Language-ID classifier (character n-gram hashing), DDP over gloo, 2 nodes x 2 ranks (torchrun static
rendezvous; node 0 is the master)."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
    log = logging.getLogger("langid")
    log.info("joined, world_size=%d", dist.get_world_size())
    model = DDP(nn.Sequential(nn.EmbeddingBag(2 ** 16, 64), nn.Linear(64, 20)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 501):
        x = torch.randint(0, 2 ** 16, (64, 48), generator=g)
        y = x[:, 0] % 20
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.4f %.1f ms/step", step, loss.item(), (time.time() - t0) * 20)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
