"""Keyword-spotting model (1-D conv over log-mel frames) trained with DDP on two nodes; each node's job script runs
torchrun with c10d rendezvous at $HEAD_NODE, exported by the node's profile."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    print(f"rank {rank}/{world} on {os.uname().nodename} ready", flush=True)
    model = DDP(nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                              nn.Linear(64, 12)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 151):
        x = torch.randn(32, 40, 98, generator=g)
        y = torch.randint(0, 12, (32,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.3f} {(time.time() - t0) / step * 1000:.0f} ms/step",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
