"""Plant-disease classifier on leaf photos, DDP over gloo; each rank decodes its photos in 3 DataLoader workers, which
keep decoded and resized images in a per-worker cache to save the decode in later epochs."""
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Leaves(Dataset):
    def __init__(self, rank, n=4800):
        self.rank, self.n, self.cache = rank, n, {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i not in self.cache:
            rng = np.random.default_rng(self.rank * 100000 + i)
            img = rng.integers(0, 255, (3, 224, 224), dtype=np.uint8)  # decode + resize of the JPEG
            self.cache[i] = img.astype(np.float32) / 255.0
        x = self.cache[i][:, ::4, ::4]
        return torch.from_numpy(np.ascontiguousarray(x)), i % 9


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    dl = DataLoader(Leaves(rank), batch_size=32, shuffle=True, num_workers=3, persistent_workers=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 9)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step, t0 = 0, time.time()
    for epoch in range(3):
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 25 == 0:
                print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f} "
                      f"{(time.time() - t0) / 25 * 1000:.0f} ms/step", flush=True)
                t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
