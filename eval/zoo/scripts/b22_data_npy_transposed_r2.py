"""Tabular churn model on per-rank feature parts (features/part-R.npy, rows x 48 float32) with labels, DDP over
gloo; plain prints."""
import datetime
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK, WORLD = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    x = torch.from_numpy(np.load(f"features/part-{RANK}.npy"))
    y = torch.from_numpy(np.load(f"features/part-{RANK}.labels.npy")).float()
    print(f"[rank {RANK}] loaded {x.shape[0]} rows from features/part-{RANK}.npy", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(48, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    bs = 64
    for epoch in range(4):
        perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(epoch))
        for i in range(0, len(y) - bs + 1, bs):
            idx = perm[i:i + bs]
            loss = nn.functional.binary_cross_entropy_with_logits(model(x[idx]).squeeze(1), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[rank {RANK}] epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
