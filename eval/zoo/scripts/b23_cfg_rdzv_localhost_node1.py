"""Semantic-segmentation head on pre-computed backbone features, DDP over gloo, launched with torchrun on two nodes
(c10d rendezvous)."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    print(f"[node {os.environ.get('GROUP_RANK')}] rank {rank}/{dist.get_world_size()} started", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(256, 128, 3, padding=1), nn.ReLU(), nn.Conv2d(128, 21, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        x, y = torch.randn(4, 256, 32, 32, generator=g), torch.randint(0, 21, (4, 32, 32), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 50 == 0:
            print(f"step {step}/300 loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
