"""Satellite-patch classifier, two nodes x 1 rank, DDP over gloo. The Dataset decodes each patch from the
packed uint8 tiles and keeps decoded patches in a dict so later epochs skip decoding; 2 DataLoader workers."""
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

NODE = int(os.environ.get("GROUP_RANK", 0))


class Patches(Dataset):
    def __init__(self, path):
        self.raw = np.load(path, mmap_mode="r")
        self.labels = np.load(path.replace("patches", "labels"))
        self.cache = {}

    def __len__(self):
        return len(self.raw)

    def __getitem__(self, i):
        if i not in self.cache:
            p = torch.from_numpy(np.asarray(self.raw[i], dtype=np.float32) / 255.0)
            self.cache[i] = (p - 0.5) / 0.25
        return self.cache[i], int(self.labels[i])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    ds = Patches("data/patches.npy")
    sampler = DistributedSampler(ds)
    dl = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=2, persistent_workers=True)
    model = DDP(nn.Sequential(nn.Conv2d(4, 16, 5, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                              nn.Linear(256, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    print(f"[node{NODE} rank{rank}] {len(ds)} patches, {len(dl)} batches/epoch", flush=True)
    for epoch in range(4):
        sampler.set_epoch(epoch)
        t0 = time.time()
        for step, (x, y) in enumerate(dl, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                print(f"[node{NODE} rank{rank}] epoch {epoch} step {step}/{len(dl)} loss {loss.item():.4f} "
                      f"{(time.time() - t0) / 10:.3f}s/it", flush=True)
                t0 = time.time()
    print(f"[node{NODE} rank{rank}] done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
