"""Image classifier on three ranks, 2 DataLoader workers per rank."""
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Synth(Dataset):
    def __init__(self, rank):
        self.rank = rank

    def __len__(self):
        return 12800

    def __getitem__(self, i):
        rng = np.random.default_rng(self.rank * 1_000_000 + i)
        img = rng.integers(0, 256, (3, 32, 32), dtype=np.uint8).astype(np.float32) / 255.0
        return torch.from_numpy(img), int(rng.integers(10))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    dl = DataLoader(Synth(rank), batch_size=32, num_workers=2, shuffle=True)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(16 * 16 * 16, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    t0 = time.time()
    for step, (x, y) in enumerate(dl, 1):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank{rank}] step {step}/{len(dl)} loss {loss.item():.3f} {(time.time() - t0) / 20:.3f}s/it")
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
