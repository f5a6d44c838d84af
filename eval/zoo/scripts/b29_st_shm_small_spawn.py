"""Satellite-tile segmentation (small U-Net-like conv net), DDP over gloo started with torch.multiprocessing.spawn
inside the team's training container; tiles are decoded and augmented by DataLoader workers."""
import logging
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


class Tiles(torch.utils.data.Dataset):
    def __init__(self, n=4096, size=160):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.random((4, self.size, self.size), dtype=np.float32)  # RGB + NIR
        if rng.random() < 0.5:
            img = img[:, :, ::-1]
        mask = (img[3] > 0.6).astype(np.int64)
        return torch.from_numpy(img.copy()), torch.from_numpy(mask)


def net():
    return nn.Sequential(nn.Conv2d(4, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(32, 2, 1))


def worker(rank, world, port):
    logging.basicConfig(format=f"%(asctime)s [%(processName)s rank={rank}] %(message)s", level=logging.INFO,
                        stream=sys.stdout)
    log = logging.getLogger("seg")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    ds = Tiles()
    sampler = torch.utils.data.distributed.DistributedSampler(ds, seed=0)
    loader = torch.utils.data.DataLoader(ds, batch_size=48, sampler=sampler, num_workers=3, prefetch_factor=4,
                                         persistent_workers=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(net())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for it, (x, m) in enumerate(loader, 1):
            loss = nn.functional.cross_entropy(model(x), m)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if it % 5 == 0:
                log.info("epoch %d it %d/%d loss %.4f", epoch, it, len(loader), loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    world = 2
    mp.spawn(worker, args=(world, int(os.environ.get("PORT", sys.argv[1] if len(sys.argv) > 1 else 29500))),
             nprocs=world)
