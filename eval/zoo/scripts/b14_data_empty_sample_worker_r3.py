"""Image classifier on pre-decoded 32x32 RGB samples (one .npy per sample, synced from the object store), DDP over
gloo, 4 ranks, 2 DataLoader workers per rank; rank 0 shows a tqdm bar."""
import glob
import os
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm


class NpySamples(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        arr = np.load(self.files[i])
        label = int(os.path.basename(self.files[i]).split("_")[1])
        return torch.from_numpy(arr).float().permute(2, 0, 1) / 255.0, label


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    ds = NpySamples(f"samples/shard-{rank}")
    print(f"[rank{rank}] {len(ds)} samples in samples/shard-{rank}", flush=True)
    dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, drop_last=True)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                              nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(3):
        for x, y in tqdm(dl, desc=f"Epoch {epoch}", disable=rank != 0):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[rank{rank}] epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
