"""Whole-slide scan tile classifier on 2 ranks (DDP, gloo). Each rank reads its shard of compressed scans through a
DataLoader with 2 workers; a worker decompresses a scan, cuts the centre tile and downsamples it to 64x64."""
import datetime
import json
import os
import time
import zlib

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class ScanTiles(Dataset):
    def __init__(self, manifest):
        self.items = [json.loads(line) for line in open(manifest)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        it = self.items[i]
        with open(it["path"], "rb") as f:
            raw = zlib.decompress(f.read())
        img = np.frombuffer(raw, dtype=np.uint8).reshape(it["h"], it["w"], 3)
        x = torch.from_numpy(img.astype(np.float32) / 255.0).permute(2, 0, 1).unsqueeze(0)
        x = F.adaptive_avg_pool2d(x, 64).squeeze(0)
        return x, it["label"]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ds = ScanTiles(f"scans/manifest-{rank}.jsonl")
    loader = DataLoader(ds, batch_size=16, num_workers=2, shuffle=False)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 4))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    print(f"rank {rank}: {len(ds)} scans in shard {rank}, {len(loader)} batches/epoch", flush=True)
    t0 = time.time()
    for epoch in range(3):
        for step, (x, y) in enumerate(loader):
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                print(f"rank {rank} epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f} "
                      f"elapsed {time.time() - t0:.1f}s", flush=True)
    dist.barrier()
    if rank == 0:
        print("training done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
