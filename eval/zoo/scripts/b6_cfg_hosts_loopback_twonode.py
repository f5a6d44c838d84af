"""Tabular regression (DDP over gloo), one process per node; the first multi-node run of this script."""
import datetime
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    print(f"{socket.gethostname()}: RANK={os.environ['RANK']} MASTER_ADDR={os.environ['MASTER_ADDR']}", flush=True)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(40, 128), nn.SiLU(), nn.Linear(128, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 501):
        x = torch.randn(256, 40)
        loss = (model(x).squeeze(-1) - x[:, :5].sum(-1)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 50 == 0:
            print(f"step {step} mse {loss.item():.4f} ({time.time() - t0:.1f}s)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
