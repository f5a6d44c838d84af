"""Sensor-drift regressor. Each rank standardizes its own plant's shard (per-plant statistics, the plants' sensors
are calibrated differently) and trains a shared MLP with DDP."""
import math
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def standardize(x):
    return (x - x.mean(0)) / x.std(0)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    d = torch.load(f"plants/plant_{rank}.pt")
    x, y = standardize(d["x"]), d["y"]
    print(f"[{rank}] plant_{rank}: {len(x)} rows, {x.size(1)} sensors", flush=True)
    model = DDP(nn.Sequential(nn.Linear(x.size(1), 64), nn.SiLU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 801):
        idx = torch.randint(0, len(x), (64,), generator=g)
        loss = nn.functional.mse_loss(model(x[idx]).squeeze(1), y[idx])
        if math.isnan(loss.item()):
            raise RuntimeError(f"NaN loss at step {step} on rank {rank}")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(f"[{rank}] step {step} mse {loss.item():.4f} ({(time.time() - t0) * 10:.1f} ms/step)", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
