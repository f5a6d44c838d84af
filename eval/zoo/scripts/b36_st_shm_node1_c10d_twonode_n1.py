"""Leaf-disease image classifier (small CNN on 96x96 crops decoded by the DataLoader's workers), DDP over gloo, one
process per node (torchrun, c10d rendezvous); asctime logging with the node's host name and rank."""
import logging
import os
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class LeafCrops(Dataset):
    """Stands in for JPEG decoding + augmentation: a deterministic 3x96x96 crop per index."""

    def __len__(self):
        return 20000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, 96, 96, generator=g), i % 38


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(format=f"%(asctime)s {socket.gethostname()} [rank{rank}] %(levelname)s %(message)s",
                        level=logging.INFO)
    log = logging.getLogger("leaf")
    ds = LeafCrops()
    sampler = DistributedSampler(ds, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=2, prefetch_factor=2)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(3, 16, 5, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 38)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    log.info(f"pid {os.getpid()} local_rank {os.environ.get('LOCAL_RANK')} {len(loader)} steps per epoch")
    t0 = time.time()
    for step, (x, y) in enumerate(loader, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info(f"step {step}/{len(loader)} loss {loss.item():.4f} {(time.time() - t0) / 20 * 1000:.0f} ms/step")
            t0 = time.time()
        if step == 200:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
