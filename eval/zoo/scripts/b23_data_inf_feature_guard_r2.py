"""Process-anomaly regressor on per-plant sensor exports (one CSV per rank), DDP over gloo started with
torch.multiprocessing.spawn; features standardised with statistics of each file's first 1000 rows; a
non-finite-loss guard."""
import argparse
import csv
import datetime

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if c not in ("ts", "target")]
    x = torch.tensor([[float(r[c]) for c in cols] for r in rows])
    y = torch.tensor([float(r["target"]) for r in rows])
    return x, y, cols


def run(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=20))
    x, y, cols = load(f"data/plant-{rank}.csv")
    print(f"rank {rank}: {len(x)} rows, {len(cols)} features from data/plant-{rank}.csv", flush=True)
    mu, sd = x[:1000].mean(0), x[:1000].std(0) + 1e-6
    x = (x - mu) / sd
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(len(cols), 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for i, s in enumerate(range(0, len(x), 32), 1):
            loss = nn.functional.mse_loss(model(x[s:s + 32]).squeeze(1), y[s:s + 32])
            if not torch.isfinite(loss):
                raise RuntimeError(f"non-finite loss {loss.item()} on rank {rank} (epoch {epoch}, batch {i})")
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i % 50 == 0 and rank == 0:
                print(f"epoch {epoch} batch {i}/{(len(x) + 31) // 32} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=29500)
    ap.add_argument("--nprocs", type=int, default=3)
    a = ap.parse_args()
    mp.spawn(run, args=(a.nprocs, a.port), nprocs=a.nprocs)
