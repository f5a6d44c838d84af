"""Image-quality regressor (small CNN) on JPEG-like thumbnails decoded and augmented in DataLoader workers (two
per rank); DDP over gloo, four processes. Each rank prints a key=value line every 20 steps with its time waiting
for data and its compute time."""
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Thumbs(Dataset):
    """Stands in for decode + random-resized-crop + colour jitter: a few ms of CPU per sample."""

    def __len__(self):
        return 40000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, 80, 80, generator=g)
        for _ in range(2):  # "decode" and augment passes
            img = F.avg_pool2d(img[None], 3, 1, 1)[0] * 1.02 + 0.01 * torch.randn(3, 80, 80, generator=g)
        img = F.interpolate(img[None], size=(48, 48), mode="bilinear", align_corners=False)[0]
        return img, img.mean() * 10


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = Thumbs()
    loader = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds, seed=0), num_workers=2, prefetch_factor=2)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data_t = comp_t = 0.0
    total = 200
    t_prev = time.time()
    for step, (x, y) in enumerate(loader, 1):
        t_data = time.time()
        loss = F.mse_loss(model(x).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t_done = time.time()
        data_t += t_data - t_prev
        comp_t += t_done - t_data
        t_prev = t_done
        if step % 20 == 0:
            print(f"ts={time.strftime('%H:%M:%S')} rank={rank} step={step}/{total} loss={loss.item():.4f} "
                  f"data_ms={data_t / 20 * 1000:.1f} compute_ms={comp_t / 20 * 1000:.1f} "
                  f"step_ms={(data_t + comp_t) / 20 * 1000:.1f}", file=sys.stdout, flush=True)
            data_t = comp_t = 0.0
        if step == total:
            break
    print(f"ts={time.strftime('%H:%M:%S')} rank={rank} event=done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
