"""Satellite land-cover classifier on 64x64 multispectral patches. The patches are stored quantised (uint8) and
decoded to float in the DataLoader workers; decoded patches are kept so that epochs after the first are cheap.
Slurm job: `srun -l` starts one task per rank, init from SLURM_* / MASTER_* variables."""
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

BANDS, SIZE = 12, 64


class PatchDataset(Dataset):
    def __init__(self, path):
        d = np.load(path)
        self.raw, self.labels = d["patches"], d["labels"]
        self.mean = d["mean"].astype(np.float32)[:, None, None]
        self.std = d["std"].astype(np.float32)[:, None, None]
        self.decoded = {}

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        if i not in self.decoded:
            x = self.raw[i].astype(np.float32) / 255.0
            x = (x - self.mean) / self.std
            # 4x upsampled view for the stem, as the full-resolution pipeline does
            self.decoded[i] = torch.from_numpy(np.repeat(np.repeat(x, 2, axis=1), 2, axis=2))
        return self.decoded[i], int(self.labels[i])


class Net(nn.Module):
    def __init__(self, n=10):
        super().__init__()
        self.stem = nn.Conv2d(BANDS, 24, 5, stride=4, padding=2)
        self.body = nn.Sequential(nn.Conv2d(24, 48, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(48, n)

    def forward(self, x):
        return self.head(self.body(F.relu(self.stem(x))))


def main():
    rank = int(os.environ["SLURM_PROCID"])
    world = int(os.environ["SLURM_NTASKS"])
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=25))
    ds = PatchDataset(f"data/eurosat_part{rank}.npz")
    loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
    print(f"[{os.environ['SLURMD_NODENAME']}] rank {rank}/{world} {len(ds)} patches, workers=2", flush=True)
    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = 0
    for epoch in range(3):
        t0 = time.time()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 10 == 0:
                print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f} "
                      f"({(time.time() - t0) * 100:.0f} ms/step)", flush=True)
                t0 = time.time()
    if rank == 0:
        print("training done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
