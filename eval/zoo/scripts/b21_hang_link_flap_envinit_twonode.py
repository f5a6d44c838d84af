"""Sequence-to-label model for sensor windows (GRU), one process per node, started by the cluster's job script with
RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT in the environment (env:// init)."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class SensorGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 256, batch_first=True)
        self.head = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 6))

    def forward(self, x):
        return self.head(self.gru(x)[0][:, -1])


def ts():
    return time.strftime("%H:%M:%S")


def main():
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    print(f"{ts()} rank {rank} of {dist.get_world_size()} up", flush=True)
    torch.manual_seed(0)
    model = DDP(SensorGRU())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, 2001):
        x = torch.randn(32, 20, 16, generator=g)
        y = torch.randint(0, 6, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"{ts()} rank {rank} step {step}/2000 loss {loss.item():.4f} {1000 * (time.time() - t) / 50:.1f} ms/step",
                  flush=True)
            t = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
