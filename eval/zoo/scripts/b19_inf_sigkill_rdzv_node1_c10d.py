"""Tabular regression (house prices) with DDP over gloo, one process per node, two nodes, c10d rendezvous."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    print(f"rank {rank}/{dist.get_world_size()} on node {os.environ.get('GROUP_RANK')} ready", flush=True)
    model = DDP(nn.Sequential(nn.Linear(30, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 1001):
        x = torch.randn(128, 30)
        loss = nn.functional.mse_loss(model(x).squeeze(1), x[:, :3].sum(1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 200 == 0:
            print(f"rank {rank} step {step} mse {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
