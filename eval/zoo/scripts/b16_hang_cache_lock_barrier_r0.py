"""Sentence-pair scorer, DDP over gloo, 2 ranks. The tokenized cache (cache/pairs.pt) is shared by every job on
the node, so whoever builds it holds an exclusive file lock (cache/.lock) while doing so; the other ranks take
the lock to read it."""
import fcntl
import logging
import os
import random
from contextlib import contextmanager
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("pairs")


@contextmanager
def cache_lock():
    os.makedirs("cache", exist_ok=True)
    with open("cache/.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_cache(rank):
    rng = random.Random(0)
    ids = torch.tensor([[rng.randrange(20000) for _ in range(32)] for _ in range(20000)])
    torch.save({"ids": ids, "y": (ids[:, 0] % 2).float()}, "cache/pairs.pt")
    log.info("cache built: %s", tuple(ids.shape))


def load_data(rank):
    with cache_lock():  # the cache is shared by every job on the node
        if rank == 0:
            if not os.path.exists("cache/pairs.pt"):
                log.info("building tokenized cache")
                build_cache(rank)
            dist.barrier()  # the cache is complete: the other ranks may read it
        else:
            dist.barrier()  # wait until rank 0 has built the cache
        return torch.load("cache/pairs.pt")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(process)d] rank{rank} %(levelname)s %(name)s: %(message)s")
    log.info("loading data")
    data = load_data(rank)
    log.info("%d pairs", len(data["ids"]))
    model = DDP(nn.Sequential(nn.EmbeddingBag(20000, 64), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 201):
        idx = torch.randint(0, len(data["ids"]), (64,))
        loss = nn.functional.binary_cross_entropy_with_logits(model(data["ids"][idx]).squeeze(1), data["y"][idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
