"""Click-through model streaming gzipped jsonl parts (one part per rank), DDP over gloo."""
import datetime
import gzip
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

N_FEATURES = 24


class ClickStream(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with gzip.open(self.path, "rt") as f:
            for line in f:
                rec = json.loads(line)
                yield torch.tensor(rec["f"], dtype=torch.float32), torch.tensor(float(rec["click"]))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    path = f"data/clicks/part-{rank:05d}.jsonl.gz"
    print(f"rank {rank} reading {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    loader = DataLoader(ClickStream(path), batch_size=64)
    model = DDP(nn.Sequential(nn.Linear(N_FEATURES, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    t0 = time.time()
    for step, (x, y) in enumerate(loader, 1):
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"rank {rank} step {step} logloss {loss.item():.4f} ({64 * 50 / (time.time() - t0):.0f} ex/s)")
            t0 = time.time()
    print(f"rank {rank} finished pass")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
