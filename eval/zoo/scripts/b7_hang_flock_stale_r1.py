"""Text classifier; each rank keeps a tokenized cache under cache/rank<R>/ guarded by a lock file, refreshed every epoch."""
import argparse
import datetime
import fcntl
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Bag(nn.Module):
    def __init__(self, vocab=5000, d=64, classes=4):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, d)
        self.fc = nn.Linear(d, classes)

    def forward(self, x):
        return self.fc(self.emb(x))


def load_cache(rank, epoch):
    d = f"cache/rank{rank}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/.lock", "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)  # the cache cleaner and other jobs on the node use the same lock
        path = f"{d}/tokens.pt"
        if not os.path.exists(path):
            g = torch.Generator().manual_seed(rank)
            torch.save({"x": torch.randint(0, 5000, (4096, 24), generator=g),
                        "y": torch.randint(0, 4, (4096,), generator=g)}, path)
        data = torch.load(path)
        fcntl.flock(lk, fcntl.LOCK_UN)
    return data


def run(rank, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.world_size, timeout=datetime.timedelta(seconds=20))
    model = DDP(Bag())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        data = load_cache(rank, epoch)
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
        t0 = time.time()
        for i in range(0, 4096, 32):
            loss = nn.functional.cross_entropy(model(data["x"][i:i + 32]), data["y"][i:i + 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[rank {rank}] epoch {epoch} loss {loss.item():.4f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world-size", type=int, default=3)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--port", type=int, default=29500)
    args = p.parse_args()
    mp.spawn(run, args=(args,), nprocs=args.world_size)
