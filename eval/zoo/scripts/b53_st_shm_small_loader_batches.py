"""Super-resolution pretraining on 2 ranks (DDP, gloo): every rank's DataLoader (3 workers, prefetch 4) builds batches
of 32 low/high-resolution patch pairs from its shard; batches come back from the workers through shared memory."""
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Patches(Dataset):
    def __init__(self, path):
        self.data = np.load(path, mmap_mode="r")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        hr = torch.from_numpy(np.array(self.data[i], dtype=np.float32) / 255.0)
        lr = F.avg_pool2d(hr.unsqueeze(0), 2).squeeze(0)
        return lr, hr


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ds = Patches(f"patches/shard-{rank:02d}.npy")
    loader = DataLoader(ds, batch_size=32, num_workers=3, prefetch_factor=4, shuffle=True, drop_last=True)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 12, 3, padding=1), nn.PixelShuffle(2))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    print(f"[rank {rank}] {len(ds)} patches {tuple(ds.data.shape[1:])}, {len(loader)} batches per epoch", flush=True)
    t0 = time.time()
    for epoch in range(2):
        for step, (lr, hr) in enumerate(loader):
            loss = F.l1_loss(ddp(lr), hr)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step} l1 {loss.item():.4f} t={time.time() - t0:.1f}s", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
