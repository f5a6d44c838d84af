"""Denoising autoencoder; every rank appends a durable per-step log line to the shared run directory."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RUN_DIR = os.environ.get("RUN_DIR", "shared/runs/dae-07")


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    os.makedirs(RUN_DIR, exist_ok=True)
    steplog = open(os.path.join(RUN_DIR, f"steps_rank{rank}.jsonl"), "a")
    model = DDP(nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 256)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    window = []
    for step in range(1, 501):
        t = time.time()
        x = torch.randn(64, 256, generator=g)
        loss = nn.functional.mse_loss(model(x + 0.3 * torch.randn(64, 256, generator=g)), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steplog.write(json.dumps({"step": step, "loss": loss.item(), "t": time.time()}) + "\n")
        steplog.flush()
        os.fsync(steplog.fileno())  # survive a node crash
        window.append(time.time() - t)
        if step % 20 == 0:
            if rank == 0:
                print(f"step {step}/500 | loss {loss.item():.4f} | {1000 * sum(window) / len(window):.1f} ms/step")
            window = []
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
