"""MLP on precomputed audio embeddings, streamed part by part; one process per rank with mp.spawn."""
import datetime
import glob
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset


class Parts(IterableDataset):
    def __init__(self, rank):
        self.files = sorted(glob.glob(f"embeddings/rank{rank}/part-*.npz"))

    def __iter__(self):
        for f in self.files:
            d = np.load(f)
            x, y = torch.from_numpy(d["emb"]), torch.from_numpy(d["label"])
            for i in range(len(x)):
                yield x[i], y[i]


def run(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 50)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ds = Parts(rank)
    if rank == 0:
        print(f"rank 0: {len(ds.files)} parts per rank, world size {world}")
    step = 0
    for xb, yb in DataLoader(ds, batch_size=32):
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 10 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}")
    print(f"rank {rank} finished: {step} steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    world = 3
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ.get("PORT", "29500")
    mp.spawn(run, args=(world,), nprocs=world)
