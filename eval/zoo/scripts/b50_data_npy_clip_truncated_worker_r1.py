"""Speaker-ID model (x-vector-style 1-D CNN over filterbank frames) on DDP, 2 ranks. The features were extracted
offline into one .npy file per utterance (feats/<shard>/<utt>.npy) with a manifest per shard; each rank trains on
its shard and loads the utterances in 3 DataLoader workers."""
import argparse
import csv
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Utterances(Dataset):
    def __init__(self, manifest):
        with open(manifest) as f:
            self.rows = list(csv.DictReader(f, delimiter="\t"))

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        row = self.rows[i]
        x = np.load(row["path"])
        return torch.from_numpy(x), int(row["speaker"])


ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--batch-size", type=int, default=32)
args = ap.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
ds = Utterances(f"feats/manifest-{rank}.tsv")
loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=3, drop_last=True,
                    generator=torch.Generator().manual_seed(100 + rank), persistent_workers=True)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Conv1d(40, 96, 5, padding=2), nn.ReLU(), nn.Conv1d(96, 96, 3, dilation=2, padding=2),
                          nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(96, 48)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
print(f"rank {rank}: {len(ds)} utterances from feats/manifest-{rank}.tsv, {len(loader)} batches/epoch", flush=True)
t0 = time.time()
for epoch in range(args.epochs):
    for it, (x, y) in enumerate(loader, 1):
        loss = F.cross_entropy(model(x.transpose(1, 2)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0:
            print(f"rank {rank} | epoch {epoch} | it {it:3d}/{len(loader)} | loss {loss.item():.3f} | "
                  f"{time.time() - t0:6.1f}s", flush=True)
dist.barrier()
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()
