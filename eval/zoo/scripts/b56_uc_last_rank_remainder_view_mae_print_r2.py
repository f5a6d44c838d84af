"""Tiny ViT-style patch classifier on 16x16 RGB crops, DDP on 3 processes. Printing is silenced on every rank but the
master with the MAE / DeiT helper (setup_for_distributed), so the console shows rank 0's lines only. Each rank takes a
contiguous slice of the crop table; the last rank also takes the rows the division leaves over."""
import builtins
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

BATCH_SIZE = 64


def setup_for_distributed(is_master):
    """This function disables printing when not in master process (from the MAE / DeiT utils)."""
    builtin_print = builtins.print

    def print(*args, **kwargs):
        force = kwargs.pop("force", False)
        if is_master or force:
            builtin_print(*args, **kwargs)

    builtins.print = print


class PatchNet(nn.Module):
    def __init__(self, n_cls=10, dim=96):
        super().__init__()
        self.embed = nn.Conv2d(3, dim, 4, 4)
        self.mix = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))
        self.head = nn.Linear(dim, n_cls)

    def forward(self, x):
        x = x.view(BATCH_SIZE, 3, 16, 16)  # crops come flattened from the table
        t = self.embed(x).flatten(2).transpose(1, 2)
        t = t + self.mix(t)
        return self.head(t.mean(1))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    setup_for_distributed(rank == 0)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(7)
    n = 1922  # rows in the crop table
    y_all = rng.integers(0, 10, n)
    x_all = rng.standard_normal((n, 3 * 16 * 16)).astype(np.float32) * 0.5
    x_all[np.arange(n), y_all * 20] += 3.0
    per = n // world
    start = rank * per
    end = n if rank == world - 1 else start + per
    x, y = torch.from_numpy(x_all[start:end]), torch.from_numpy(y_all[start:end])
    print(f"| distributed init (rank {rank}): world {world}, {per} rows per rank")
    model = DDP(PatchNet())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    step = 0
    for epoch in range(6):
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        t0 = time.time()
        for i in range(0, len(x), BATCH_SIZE):
            idx = perm[i:i + BATCH_SIZE]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 5 == 0:
                print(f"Epoch: [{epoch}]  [{i // BATCH_SIZE:2d}/{len(x) // BATCH_SIZE}]  loss: {loss.item():.4f}  "
                      f"time: {(time.time() - t0) / (i // BATCH_SIZE + 1):.4f}")
        print(f"Epoch: [{epoch}] Total time: {time.time() - t0:.2f}s")
    print("Training done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
