"""Keyword-spotting model on log-mel features, DDP over gloo. Each rank reads its own feature parts from the dataset
mount (/mnt/datasets on the cluster, `mnt/datasets` here); two DataLoader workers per rank, with a DataLoader timeout
so a stuck worker cannot hang the job forever."""
import glob
import logging
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

logging.basicConfig(format="%(asctime)s %(name)s[%(process)d] %(levelname)s: %(message)s", level=logging.INFO)
log = logging.getLogger("kws")
ROWS = 2000


class Parts(Dataset):
    def __init__(self, files):
        self.files, self.cache = files, {}

    def __len__(self):
        return len(self.files) * ROWS

    def __getitem__(self, i):
        f = self.files[i // ROWS]
        if f not in self.cache:
            self.cache = {f: np.load(f)}
        x = self.cache[f][i % ROWS]
        return torch.from_numpy(x[:-1]).view(40, 20), int(x[-1])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    files = sorted(glob.glob(f"mnt/datasets/kws-v3/rank{rank}/feats-*.npy"))
    log.info("rank %d: %d feature parts under mnt/datasets/kws-v3/rank%d", rank, len(files), rank)
    dl = DataLoader(Parts(files), batch_size=64, num_workers=2, timeout=20)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv1d(40, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step, (x, y) in enumerate(dl, 1):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("rank %d step %d/%d loss %.4f %.1f ms/step", rank, step, len(dl), loss.item(),
                     (time.time() - t0) * 50)
            t0 = time.time()
    log.info("rank %d: epoch done", rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
