"""Tabular churn model with BatchNorm; each rank reads its own part file and iterates it in mini-batches."""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    part = torch.load(f"data/churn/part-{rank}.pt")
    dl = DataLoader(TensorDataset(part["x"], part["y"]), batch_size=64, shuffle=True)
    model = DDP(nn.Sequential(nn.Linear(30, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 64),
                              nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(4):
        total = 0.0
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"rank {rank} epoch {epoch} mean loss {total / len(dl):.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
