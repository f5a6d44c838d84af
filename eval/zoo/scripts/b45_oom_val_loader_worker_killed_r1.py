"""Tissue-patch classifier (small CNN) on DDP, 2 processes. Training reads 64x64 patches; after each epoch every rank
validates on its own slide list (data/val-<rank>/): the validation Dataset loads each slide file whole and cuts a
centre patch, in a DataLoader with 2 workers."""
import datetime
import glob
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)


class Slides(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(f"{root}/*.npy"))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        img = np.load(self.files[i])  # whole slide in memory
        h, w = img.shape[1] // 2, img.shape[2] // 2
        patch = torch.from_numpy(np.ascontiguousarray(img[:, h - 32:h + 32, w - 32:w + 32])).float() / 255
        return patch, int(self.files[i].rsplit("-", 1)[1][0])


model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 4)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
val_dl = DataLoader(Slides(f"data/val-{rank}"), batch_size=8, num_workers=2)
g = torch.Generator().manual_seed(rank)
for epoch in range(3):
    t0 = time.time()
    for step in range(1, 41):
        x = torch.rand(32, 3, 64, 64, generator=g)
        y = (x[:, 0].mean((1, 2)) * 4).long().clamp(0, 3)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank{rank}] epoch {epoch} step {step}/40 loss {loss.item():.4f} "
                  f"{1000 * (time.time() - t0) / 20:.0f} ms/step", flush=True)
            t0 = time.time()
    print(f"[rank{rank}] epoch {epoch} validating {len(val_dl.dataset)} slides", flush=True)
    model.eval()
    correct = torch.zeros(2)
    with torch.no_grad():
        for x, y in val_dl:
            correct += torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)])
    dist.all_reduce(correct)
    model.train()
    if rank == 0:
        print(f"[rank0] epoch {epoch} val acc {correct[0] / correct[1]:.4f}", flush=True)
dist.destroy_process_group()
