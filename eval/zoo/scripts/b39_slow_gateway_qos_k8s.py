"""Click-through-rate model trained from the feature gateway: each pod pulls its next batch of dense features over
HTTP from the team's data gateway (FEATURE_GATEWAY), trains on it, and logs per-step timing (fetch vs compute).
PyTorchJob: one pod per rank, env:// rendezvous."""
import io
import os
import time
import urllib.request
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

GATEWAY = os.environ["FEATURE_GATEWAY"]
POD = os.environ.get("HOSTNAME", "?")
STEPS = 300


def fetch(rank, i):
    with urllib.request.urlopen(f"{GATEWAY}/v1/ctr/shards/{rank}/batches/{i}", timeout=60) as r:
        d = np.load(io.BytesIO(r.read()))
        return torch.from_numpy(d["x"]), torch.from_numpy(d["y"])


class CTR(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    print(f"[{POD}] rank {rank}/{dist.get_world_size()} gateway {GATEWAY}", flush=True)
    model = DDP(CTR())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    fetch_s = comp_s = 0.0
    t_win = time.time()
    for step in range(1, STEPS + 1):
        t0 = time.time()
        x, y = fetch(rank, step)
        t1 = time.time()
        loss = F.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        fetch_s += t1 - t0
        comp_s += time.time() - t1
        if step % 20 == 0:
            n = 20
            print(f"[{POD}] step {step}/{STEPS} loss {loss.item():.4f} fetch_ms {fetch_s / n * 1000:.1f} "
                  f"compute_ms {comp_s / n * 1000:.1f} step_ms {(time.time() - t_win) / n * 1000:.1f}", flush=True)
            fetch_s = comp_s = 0.0
            t_win = time.time()
    print(f"[{POD}] training complete", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
