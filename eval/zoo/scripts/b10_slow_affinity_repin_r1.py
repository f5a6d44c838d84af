"""Small CNN on a synthetic CIFAR-like set; one process per core (each rank binds itself to its own core)."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

EPOCHS, BATCH = 6, 32


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def run(rank, world):
    os.sched_setaffinity(0, {rank % os.cpu_count()})  # one core per process, no oversubscription
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20))
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(6400, 3, 32, 32, generator=g), torch.randint(0, 10, (6400,), generator=g)
    sampler = DistributedSampler(TensorDataset(x, y), num_replicas=world, rank=rank)
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, sampler=sampler)
    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        t = time.time()
        for i, (xb, yb) in enumerate(loader):
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if (i + 1) % 20 == 0:
                print(f"rank {rank} | epoch {epoch} | batch {i + 1}/{len(loader)} | loss {loss.item():.4f} | "
                      f"{(time.time() - t) * 1000 / 20:.1f} ms/batch")
                t = time.time()
    if rank == 0:
        torch.save(model.module.state_dict(), "cnn.pt")
        print("saved cnn.pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    world = 2
    os.environ["MASTER_PORT"] = os.environ.get("PORT", "29500")
    mp.spawn(run, args=(world,), nprocs=world)
