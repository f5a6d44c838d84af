"""Tabular churn model, a small Lightning-style setup written by hand (LightningModule-like class + a Trainer loop).

Each rank reads its own exported CSV shard: data/shards/train_<rank>.csv (columns f0..f15, label).
"""
import csv
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

NFEAT = 16


class CsvShard(Dataset):
    def __init__(self, path):
        with open(path, newline="") as f:
            reader = csv.reader(f)
            self.header = next(reader)
            self.rows = list(reader)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        row = self.rows[i]
        x = torch.tensor([float(v) for v in row[:NFEAT]])
        y = torch.tensor(float(row[NFEAT]))
        return x, y


class ChurnModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(NFEAT, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def training_step(self, model, batch):
        x, y = batch
        return nn.functional.binary_cross_entropy_with_logits(model(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class Trainer:
    def __init__(self, max_epochs, log_every_n_steps=25):
        self.max_epochs, self.log_every = max_epochs, log_every_n_steps
        self.rank, self.world = dist.get_rank(), dist.get_world_size()

    def fit(self, module, loader):
        model = DDP(module)
        opt = module.configure_optimizers()
        step = 0
        for epoch in range(self.max_epochs):
            t0 = time.time()
            for batch in loader:
                loss = module.training_step(model, batch)
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
                if self.rank == 0 and step % self.log_every == 0:
                    print(f"Epoch {epoch}: step {step} train_loss={loss.item():.4f} "
                          f"({(time.time() - t0) / (step - epoch * len(loader)):.3f}s/it)")
            if self.rank == 0:
                print(f"Epoch {epoch}: finished in {time.time() - t0:.1f}s")


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    ds = CsvShard(f"data/shards/train_{rank}.csv")
    print(f"[rank {rank}] loaded {len(ds)} rows from data/shards/train_{rank}.csv")
    loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, drop_last=True)
    Trainer(max_epochs=3).fit(ChurnModule(), loader)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
