"""Segmentation-style CNN on pre-extracted patches; every rank streams its own shard, one .npy part at a time."""
import datetime
import glob
import logging
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train_seg")


def stream_parts(rank, batch):
    for path in sorted(glob.glob(f"data/patches/shard{rank}/part-*.npy")):
        arr = np.load(path)
        for i in range(0, len(arr) - batch + 1, batch):
            yield torch.from_numpy(arr[i:i + batch]).float()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(4, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1),
                                  nn.ReLU(), nn.Conv2d(16, 3, 1))

    def forward(self, x):
        return self.body(x)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        log.info("world size %d, patches from data/patches/shard*/", world)
    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step, t0 = 0, time.time()
    for x in stream_parts(rank, 16):
        inp, target = x[:, :4], (x[:, 4] > 0).long() + (x[:, 4] > 1).long()
        loss = nn.functional.cross_entropy(model(inp), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if rank == 0 and step % 20 == 0:
            log.info("step %d loss %.4f (%.1f ms/step)", step, loss.item(), (time.time() - t0) * 50)
            t0 = time.time()
    log.info("rank %d finished %d steps", rank, step)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
