"""Turbine sensor forecaster (GRU over 48 readings -> next reading) with torch.multiprocessing.spawn, 4 processes on
one node, gloo. Each process trains on one turbine group's JSON-lines export (data/group-<R>.jsonl). The loss is
checked every step, as in the team's other trainers: an infinite or NaN loss ends the run."""
import datetime
import json
import math
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 64, batch_first=True)
        self.head = nn.Linear(64, 3)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


def load_group(rank):
    windows = []
    with open(f"data/group-{rank}.jsonl") as f:
        for line in f:
            rec = json.loads(line)
            windows.append(rec["readings"])
    t = torch.tensor(windows, dtype=torch.float32)  # (N, 49, 3): 48 inputs + the next reading
    return t[:, :48], t[:, 48]


def worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Forecaster())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = load_group(rank)
    print(f"rank {rank}: group-{rank}.jsonl, {len(x)} windows", flush=True)
    for it in range(len(x) // 32):
        xb, yb = x[it * 32:(it + 1) * 32], y[it * 32:(it + 1) * 32]
        loss = nn.functional.smooth_l1_loss(model(xb), yb)
        if not math.isfinite(loss.item()):
            raise RuntimeError(f"Loss is {loss.item()} at iteration {it} on rank {rank}, stopping training")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 5 == 0:
            print(f"rank {rank} it {it} loss {loss.item():.5f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    mp.spawn(worker, args=(4,), nprocs=4, join=True)
