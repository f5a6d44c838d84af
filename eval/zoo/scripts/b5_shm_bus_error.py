"""Image classifier fine-tune, DDP on CPU (gloo), augmentations in DataLoader workers."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class AugmentedImages(Dataset):
    """Synthetic stand-in for decoded JPEGs: random crops + flips at 160x160."""

    def __init__(self, n, size=160):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(idx)
        img = torch.rand(3, self.size + 32, self.size + 32, generator=g)
        i, j = torch.randint(0, 32, (2,), generator=g).tolist()
        img = img[:, i:i + self.size, j:j + self.size]
        if idx % 2:
            img = img.flip(-1)
        return img.contiguous(), idx % 10


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 5, stride=4)
        self.c2 = nn.Conv2d(8, 16, 3, stride=2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.c1(x))
        x = F.relu(self.c2(x))
        return self.fc(x.mean((2, 3)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=96)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--epochs", type=int, default=2)
    args = p.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(SmallCNN())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ds = AugmentedImages(4096)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers,
                        prefetch_factor=4, persistent_workers=True)
    if rank == 0:
        print(f"world={world} batch={args.batch_size} workers/rank={args.workers} steps/epoch={len(loader)}")
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and step % 5 == 0:
                print(f"epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f}")
    if rank == 0:
        print("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
