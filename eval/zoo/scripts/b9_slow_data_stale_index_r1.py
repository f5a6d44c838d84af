"""Sentence-pair scorer; each rank reads its jsonl part through a byte-offset index (.idx.npy) built by the exporter."""
import datetime
import itertools
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class IndexedJsonl(Dataset):
    def __init__(self, path):
        self.path = path
        self.offsets = np.load(path + ".idx.npy")
        with open(path) as f:
            self.n = sum(1 for _ in f)
        self.f = open(path)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i < len(self.offsets):
            self.f.seek(int(self.offsets[i]))
            line = self.f.readline()
        else:  # index older than the file: find the row by reading from the start
            self.f.seek(0)
            line = next(itertools.islice(self.f, i, None))
        r = json.loads(line)
        return torch.tensor(r["a"], dtype=torch.float32), torch.tensor(r["b"], dtype=torch.float32), r["score"]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    ds = IndexedJsonl(f"data/pairs-{rank:03d}.jsonl")
    dl = DataLoader(ds, batch_size=16, shuffle=False)
    model = DDP(nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 32)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t = time.time()
    for step, (a, b, s) in enumerate(dl, 1):
        pred = nn.functional.cosine_similarity(model(a), model(b))
        loss = nn.functional.mse_loss(pred, s.float())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank{rank}] step {step}/{len(dl)} loss {loss.item():.4f} step_time {(time.time() - t) * 50:.1f} ms")
            t = time.time()
        if step == 420:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
