"""Keyword-spotting CNN on precomputed log-mel features (one .npy file per utterance, listed in data/train.txt),
DDP over gloo, DataLoader with 2 workers per rank; plain prints every 20 steps."""
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class FeatDataset(Dataset):
    def __init__(self, listing):
        with open(listing) as fh:
            self.items = [line.split() for line in fh if line.strip()]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        feats = np.load(path)
        return torch.from_numpy(feats).unsqueeze(0), int(label)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = FeatDataset("data/train.txt")
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 12)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    print(f"rank {rank}/{world} pid {os.getpid()}: {len(sampler)} utterances, {len(loader)} steps per epoch")
    for epoch in range(2):
        sampler.set_epoch(epoch)
        t0 = time.time()
        for step, (x, y) in enumerate(loader, 1):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"rank {rank} epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f} "
                      f"{(time.time() - t0) / 20 * 1000:.1f} ms/step")
                t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
