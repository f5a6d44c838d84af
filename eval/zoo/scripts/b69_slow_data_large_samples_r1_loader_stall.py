"""Satellite-tile land-cover classifier trained data-parallel on 3 workers (hand-rolled DDP, one flat gradient
all-reduce per step). Each rank reads its own shard (data/shard-R.npy: the tiles' sizes in megapixels, as the
shard's index lists them) through a DataLoader with 4 workers; decoding a tile takes time in proportion to its size
(a sleep stands in for the JPEG2000 decode). Every rank logs its data wait and its step time. The heavy part of each
step runs on the accelerator (simgpu69.kernels)."""
import datetime
import logging
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import simgpu69

DECODE_S_PER_MP = 0.05
STEPS, BATCH, KERNELS_S, WIRE_S = 200, 8, 0.18, 0.02


class TileShard(Dataset):
    def __init__(self, path):
        self.mp = np.load(path)

    def __len__(self):
        return len(self.mp)

    def __getitem__(self, i):
        time.sleep(float(self.mp[i]) * DECODE_S_PER_MP)  # decode of the tile (size in megapixels)
        rng = np.random.default_rng(i)
        x = torch.from_numpy(rng.standard_normal((4, 16, 16)).astype(np.float32))
        return x, int(x[0].mean() > 0)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s | rank {rank} | %(levelname)s | %(message)s")
    log = logging.getLogger("landcover")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(4, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(16, 2))
    params = list(model.parameters())
    for p in params:
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    shard = TileShard(f"data/shard-{rank}.npy")
    loader = DataLoader(shard, batch_size=BATCH, num_workers=4, prefetch_factor=2, shuffle=False)
    log.info("shard %d: %d tiles, %.1f MP mean, loader workers 4", rank, len(shard), shard.mp.mean())
    it = iter(loader)
    for step in range(1, STEPS + 1):
        t0 = time.time()
        x, y = next(it)
        t1 = time.time()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        simgpu69.kernels(KERNELS_S, f"gpu{rank}")
        flat = torch.cat([p.grad.flatten() for p in params])
        dist.all_reduce(flat)
        simgpu69.wire(WIRE_S, f"nic{rank}")
        flat /= world
        off = 0
        for p in params:
            p.grad.copy_(flat[off:off + p.numel()].view_as(p))
            off += p.numel()
        opt.step()
        t2 = time.time()
        log.info("step %d/%d | loss %.4f | data %.3fs | batch %.3fs", step, STEPS, loss.item(), t1 - t0, t2 - t0)
    dist.barrier()
    log.info("epoch done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
