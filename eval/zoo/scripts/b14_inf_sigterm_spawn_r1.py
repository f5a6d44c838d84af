"""Time-series forecaster (GRU), DDP over gloo, started with torch.multiprocessing.spawn on one machine:
`python train_forecast.py --nprocs 2`."""
import argparse
import os
import time
from datetime import datetime

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 64, batch_first=True)
        self.head = nn.Linear(64, 1)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def run(rank, world, args):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(8000, 24, 6, generator=g)
    y = x[:, -6:, 0].mean(1) + 0.1 * torch.randn(8000, generator=g)
    model = DDP(Forecaster())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps_per_epoch = len(x) // 64
    for epoch in range(args.epochs):
        t0 = time.time()
        for i in range(steps_per_epoch):
            b = slice(i * 64, (i + 1) * 64)
            loss = nn.functional.mse_loss(model(x[b]), y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 25 == 0:
                print(f"{datetime.now():%H:%M:%S} rank {rank} epoch {epoch} iter {i}/{steps_per_epoch} "
                      f"mse {loss.item():.4f}", flush=True)
        print(f"{datetime.now():%H:%M:%S} rank {rank} epoch {epoch} finished in {time.time() - t0:.1f}s", flush=True)
        if rank == 0:
            torch.save({"epoch": epoch, "model": model.module.state_dict()}, "forecaster_last.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--port", type=int, default=29500)
    args = ap.parse_args()
    print(f"spawning {args.nprocs} workers", flush=True)
    mp.spawn(run, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
