"""ECG beat classifier (1-D CNN), DDP over gloo, started with torch.multiprocessing.spawn (one process per shard
directory); each rank reads its compressed .npz parts through a DataLoader with 2 workers."""
import glob
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Beats(Dataset):
    def __init__(self, files):
        self.files = files
        self.per_file = 400
        self._cache = (None, None)

    def __len__(self):
        return len(self.files) * self.per_file

    def __getitem__(self, i):
        f, j = divmod(i, self.per_file)
        if self._cache[0] != f:
            with np.load(self.files[f]) as z:
                self._cache = (f, (z["x"], z["y"]))
        x, y = self._cache[1]
        return torch.from_numpy(x[j]), int(y[j])


def run(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    files = sorted(glob.glob(f"data/ecg/site-{rank}/beats-*.npz"))
    print(f"[rank {rank}] {len(files)} parts in data/ecg/site-{rank}", flush=True)
    loader = DataLoader(Beats(files), batch_size=32, num_workers=2)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv1d(1, 16, 7, padding=3), nn.ReLU(), nn.MaxPool1d(4), nn.Conv1d(16, 32, 5, padding=2), nn.ReLU(),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 5)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for step, (x, y) in enumerate(loader, 1):
            loss = nn.functional.cross_entropy(model(x.unsqueeze(1)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    world = 3
    port = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("PORT", 29500))
    mp.spawn(run, args=(world, port), nprocs=world)
