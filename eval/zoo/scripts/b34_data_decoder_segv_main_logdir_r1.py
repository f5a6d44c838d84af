"""Satellite-tile land-cover classifier, DDP over gloo, 3 processes; tiles are stored in the team's packed tile
format (data/tiles-<rank>.pack) and decoded in the main process with the vendored `tilecodec` reader (a ctypes
binding that hands the tile's payload to the native decoder without copying)."""
import time
from datetime import timedelta

import tilecodec
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    reader = tilecodec.PackReader(f"data/tiles-{rank}.pack")
    print(f"rank {rank}: {len(reader)} tiles in data/tiles-{rank}.pack", flush=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(4, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    t0 = time.time()
    for step in range(1, len(reader) // 16 + 1):
        tiles = [reader.decode(i) for i in range((step - 1) * 16, step * 16)]
        x = torch.stack([torch.from_numpy(t[0]) for t in tiles]).float() / 255
        y = torch.tensor([t[1] for t in tiles])
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f} {(time.time() - t0) / 10 * 1000:.0f} ms/step",
                  flush=True)
            t0 = time.time()
    print(f"rank {rank} epoch done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
