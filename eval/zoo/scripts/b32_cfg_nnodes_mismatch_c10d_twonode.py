"""Image-embedding fine-tune (small CNN + projection head, InfoNCE between two augmentations), DDP over gloo,
launched on two nodes with torchrun's c10d rendezvous."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world} on {os.uname().nodename}", flush=True)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 128))
    model = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 201):
        x = torch.rand(64, 3, 32, 32, generator=g)
        a, b = F.normalize(model(x + 0.1 * torch.randn_like(x)), dim=1), F.normalize(model(x.flip(3)), dim=1)
        loss = F.cross_entropy(a @ b.T / 0.1, torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
