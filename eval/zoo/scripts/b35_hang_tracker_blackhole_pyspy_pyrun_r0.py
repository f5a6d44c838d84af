"""Churn model (tabular MLP), DDP over gloo; rank 0 posts its metrics to the team's experiment tracker
($TRACKER_URL, a small in-house HTTP service) every 50 steps; plain prints."""
import json
import os
import time
import urllib.request
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

TRACKER = os.environ.get("TRACKER_URL", "http://tracker.ml.internal:8080")


def post_metrics(run, step, metrics):
    body = json.dumps({"run": run, "step": step, "metrics": metrics, "ts": time.time()}).encode()
    req = urllib.request.Request(f"{TRACKER}/api/v1/runs/{run}/metrics", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        resp.read()


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    run = "churn-mlp-1206"
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(60000, 64, generator=g)
    y = (x[:, :8].sum(1) + 0.5 * torch.randn(60000, generator=g) > 0).float()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512),
                                                              nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 1001):
        i = (step * 128) % (len(x) - 128)
        loss = F.binary_cross_entropy_with_logits(model(x[i:i + 128]).squeeze(1), y[i:i + 128])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f}")
        if rank == 0 and step % 50 == 0:
            post_metrics(run, step, {"loss": loss.item(), "elapsed_s": round(time.time() - t0, 2)})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
