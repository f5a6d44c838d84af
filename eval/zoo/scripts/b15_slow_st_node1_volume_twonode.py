"""Acoustic-event classifier over precomputed log-mel windows (shared/feats/part-<rank>.npy on the dataset volume,
read sequentially by 2 DataLoader workers per rank), DDP over gloo, two nodes with one rank each. Every rank logs
its loss, its data wait and its step time every 10 steps."""
import logging
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

STEPS = 300
NODE = os.environ.get("GROUP_RANK", "0")
logging.basicConfig(format=f"%(asctime)s [node{NODE} rank{os.environ.get('RANK', '0')}] %(message)s",
                    level=logging.INFO)
log = logging.getLogger("events")


class Windows(Dataset):
    def __init__(self, path):
        self.path = path
        self.n = np.load(path, mmap_mode="r").shape[0]
        self.arr = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.arr is None:
            self.arr = np.load(self.path, mmap_mode="r")
        x = torch.from_numpy(np.array(self.arr[i]))
        return x, int(x[:4].mean() > 0) + 2 * int(x[-4:].mean() > 0)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    ds = Windows(f"shared/feats/part-{rank}.npy")
    dl = DataLoader(ds, batch_size=32, shuffle=False, num_workers=2, persistent_workers=True, drop_last=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(64 * 32, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                              nn.Linear(256, 4)))
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    log.info("%d windows in part-%d.npy, %d steps", len(ds), rank, STEPS)
    it = iter(dl)
    data_s = step_s = 0.0
    for step in range(1, STEPS + 1):
        t0 = time.time()
        x, y = next(it)
        t1 = time.time()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        data_s += t1 - t0
        step_s += time.time() - t0
        if step % 10 == 0:
            log.info("step %d/%d loss %.4f data_ms %.1f step_ms %.1f", step, STEPS, loss.item(), data_s * 100,
                     step_s * 100)
            data_s = step_s = 0.0
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
