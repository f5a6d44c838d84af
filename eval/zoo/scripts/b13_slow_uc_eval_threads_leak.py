"""Tabular autoencoder for anomaly scoring, DDP over gloo. Every 150 steps rank-local validation runs through the
team's scoring helper, which uses all cores for the big validation matmul."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def score_validation(model, val):
    # from the scoring library: validation is one big batch, use every core we have
    torch.set_num_threads(max(16, os.cpu_count() or 1))
    with torch.no_grad():
        err = ((model(val) - val) ** 2).mean(1)
    return err.mean().item(), err.quantile(0.99).item()


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(20000, 128, generator=g)
    val = torch.randn(4000, 128, generator=g)
    model = DDP(nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 128)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 451):
        idx = torch.randint(0, len(x), (64,), generator=g)
        loss = nn.functional.mse_loss(model(x[idx]), x[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f} avg_step {(time.time() - t0) / 25 * 1000:.1f} ms",
                  flush=True)
            t0 = time.time()
        if step % 150 == 0:
            mean_err, p99 = score_validation(model.module, val)
            print(f"[rank {rank}] val step {step} recon {mean_err:.4f} p99 {p99:.4f}", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
