"""Small convnet on synthetic 32x32 images; plain DDP loop, logging on rank 0."""
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s", level=logging.INFO)
log = logging.getLogger("train")


def net():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 8 * 8, 10))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        log.info("world size %d, local world size %s", world, os.environ["LOCAL_WORLD_SIZE"])
    torch.manual_seed(0)
    model = DDP(net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 1001):
        x = torch.randn(16, 3, 32, 32, generator=g)
        y = torch.randint(0, 10, (16,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 10 == 0:
            log.info("step %d/1000 loss %.4f", step, loss.item())
    if rank == 0:
        log.info("training done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
