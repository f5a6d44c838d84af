"""Product-image category classifier (a small CNN over 32x32 thumbnails stored as .npy, one file per product) on DDP,
3 ranks. Each rank lists its shard directory (data/thumbs/shard-<rank>/) once at start and reads the files in 2
DataLoader workers; labels come from the file name (<product_id>_<category>.npy)."""
import datetime
import glob
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Thumbs(Dataset):
    def __init__(self, folder):
        self.files = sorted(glob.glob(os.path.join(folder, "*.npy")))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path = self.files[i]
        img = np.load(path).astype(np.float32) / 255.0
        return torch.from_numpy(img).permute(2, 0, 1), int(path.rsplit("_", 1)[1][:-4])


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
ds = Thumbs(f"data/thumbs/shard-{rank}")
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, drop_last=True,
                    generator=torch.Generator().manual_seed(rank))
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 16)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
print(f"rank {rank}: {len(ds)} thumbnails in data/thumbs/shard-{rank}", flush=True)
t0 = time.time()
for epoch in range(6):
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"rank {rank} epoch {epoch} step {step}/{len(loader)} loss {loss.item():.3f} "
                  f"t={time.time() - t0:.1f}s", flush=True)
dist.barrier()
if rank == 0:
    torch.save(model.module.state_dict(), "thumbs_cls.pt")
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()
