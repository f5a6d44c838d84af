"""Product-image classifier: per-rank image shards (one .npy per image), DataLoader with workers, DDP/gloo."""
import datetime
import glob
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class ImageFolderNpy(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
        self.labels = [int(os.path.basename(f)[:-4].split("_")[1]) for f in self.files]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        img = np.load(self.files[i]).astype(np.float32) / 255.0  # H x W x C
        return torch.from_numpy(img).permute(2, 0, 1), self.labels[i]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    ds = ImageFolderNpy(f"data/images/shard{rank}")
    loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2)
    print(f"[rank{rank}] {len(ds)} images, {len(loader)} batches/epoch")
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 12)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(3):
        t0 = time.time()
        for i, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 10 == 0:
                print(f"[rank{rank}] epoch {epoch} batch {i}/{len(loader)} loss {loss.item():.3f}")
        print(f"[rank{rank}] epoch {epoch} took {time.time() - t0:.1f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
