"""Tabular regression (house prices), DDP over gloo, 3 ranks; JSON log lines with per-step timing."""
import json
import os
import time
from datetime import datetime, timedelta, timezone

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def log(**kw):
    print(json.dumps({"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
                      "rank": int(os.environ["RANK"]), **kw}), flush=True)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(40000, 64, generator=g)
    y = x[:, :10].sum(1, keepdim=True) + 0.1 * torch.randn(40000, 1, generator=g)
    model = DDP(nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    total = 800
    log(event="start", steps=total, world=dist.get_world_size())
    for step in range(1, total + 1):
        t0 = time.perf_counter()
        i = torch.randint(0, 40000, (512,), generator=g)
        xb, yb = x[i], y[i]
        t1 = time.perf_counter()
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t2 = time.perf_counter()
        if step % 10 == 0:
            log(event="train", step=step, loss=round(loss.item(), 4), data_ms=round((t1 - t0) * 1e3, 2),
                step_ms=round((t2 - t0) * 1e3, 2))
    log(event="end")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
