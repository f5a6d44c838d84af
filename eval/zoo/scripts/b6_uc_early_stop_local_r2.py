"""Sentiment regressor with early stopping on the validation loss (DDP, gloo)."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

PATIENCE = 3


def load_split(rank, split):
    d = torch.load(f"data/{split}_{rank}.pt")
    return d["x"], d["y"]


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        loss = nn.functional.mse_loss(model(x), y).item()
    model.train()
    return loss


def train():
    rank = dist.get_rank()
    xtr, ytr = load_split(rank, "train")
    xva, yva = load_split(rank, "val")
    model = DDP(nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    best, bad_epochs = float("inf"), 0
    for epoch in range(40):
        perm = torch.randperm(len(xtr), generator=torch.Generator().manual_seed(epoch))
        for i in range(0, len(xtr), 32):
            idx = perm[i:i + 32]
            loss = nn.functional.mse_loss(model(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        val = evaluate(model, xva, yva)
        print(f"[rank {rank}] epoch {epoch} train_loss {loss.item():.4f} val_loss {val:.4f}")
        if val < best - 1e-3:
            best, bad_epochs = val, 0
            if rank == 0:
                torch.save(model.module.state_dict(), "best.pt")
        else:
            bad_epochs += 1
            if bad_epochs >= PATIENCE:
                print(f"[rank {rank}] early stopping at epoch {epoch} (best val_loss {best:.4f})")
                return
    print(f"[rank {rank}] finished 40 epochs")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    train()
    dist.destroy_process_group()
