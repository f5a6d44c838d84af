"""Sentiment classifier (bag of embeddings); written to be started as `python train_sent.py`: it spawns one
process per worker itself."""
import argparse
import datetime
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, args):
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "12355")
    dist.init_process_group("gloo", rank=rank, world_size=args.workers, timeout=datetime.timedelta(seconds=20))
    print(f"worker {rank}/{args.workers} ready")
    model = DDP(nn.EmbeddingBag(5000, 2, mode="mean"))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        x = torch.randint(0, 5000, (32, 20), generator=g)
        y = (x[:, 0] % 2)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.workers)
