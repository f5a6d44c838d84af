import os

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def load_shard(rank):
    feats = np.load(f"features/part{rank}.npy")
    labels = np.load(f"features/part{rank}_labels.npy")
    return torch.from_numpy(feats).float(), torch.from_numpy(labels).long()


def run(rank, world_size, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    x, y = load_shard(rank)
    print(f"rank {rank}: shard {tuple(x.shape)}")
    model = DDP(torch.nn.Linear(x.shape[1], 5))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(10):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 64):
            idx = perm[i:i + 64]
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    if rank == 0:
        print("final loss", loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(os.environ.get("ZOO_PORT", 29500))
    mp.spawn(run, args=(3, port), nprocs=3)
