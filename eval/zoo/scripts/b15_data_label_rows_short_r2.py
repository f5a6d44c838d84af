"""Land-cover classifier over per-pixel spectral features, DDP over gloo, 3 ranks; each rank reads its tile's
feature matrix and label vector (features/tile-<rank>.npy, labels/tile-<rank>.npy), 2 DataLoader workers."""
import logging
import os
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("landcover")


class Pixels(Dataset):
    def __init__(self, rank):
        self.x = np.load(f"features/tile-{rank}.npy", mmap_mode="r")
        self.y = np.load(f"labels/tile-{rank}.npy")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return torch.from_numpy(np.array(self.x[i])), int(self.y[i])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    ds = Pixels(rank)
    log.info("rank %d: tile-%d.npy, %d pixels x %d bands", rank, rank, len(ds), ds.x.shape[1])
    dl = DataLoader(ds, batch_size=128, shuffle=True, num_workers=2)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(13, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for i, (x, y) in enumerate(dl, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 20 == 0 and rank == 0:
                log.info("epoch %d iter %d/%d loss %.4f", epoch, i, len(dl), loss.item())
        log.info("rank %d epoch %d done", rank, epoch)
    if rank == 0:
        os.makedirs("out", exist_ok=True)
        torch.save(model.module.state_dict(), "out/landcover.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
