"""ResNet-ish classifier on synthetic data; written for the 4-GPU workstation."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 4  # one process per GPU on the workstation
BATCH = 256 // WORLD_SIZE


def main():
    rank = int(os.environ["RANK"])
    print(f"rank {rank}: initialising process group (world size {WORLD_SIZE})")
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=datetime.timedelta(seconds=20))
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                              nn.Linear(16, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(100):
        x, y = torch.randn(BATCH, 3, 32, 32), torch.randint(0, 10, (BATCH,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
