"""Image classifier (small CNN on 32x32 tiles) trained with DDP on two nodes (torchrun, static rendezvous). The job
script stages the tiles from the shared filesystem to each node's local scratch before launching; every rank reads its
shard from scratch/tiles-v2/."""
import datetime
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

SCRATCH = "scratch/tiles-v2"


def load_shard(rank, world):
    path = os.path.join(SCRATCH, f"train-{rank:02d}-of-{world:02d}.npz")
    with np.load(path) as z:
        return TensorDataset(torch.from_numpy(z["x"]), torch.from_numpy(z["y"]))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(32, 10)))
    print(f"[{rank}/{world}] model ready, reading shard from {SCRATCH}", flush=True)
    loader = DataLoader(load_shard(rank, world), batch_size=64, shuffle=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    t0 = time.time()
    for epoch in range(2):
        for i, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 10 == 0:
                print(f"[{rank}/{world}] epoch {epoch} iter {i}/{len(loader)} loss {loss.item():.4f} "
                      f"({time.time() - t0:.1f}s)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
