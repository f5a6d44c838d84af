"""Keyword-spotting CNN on log-mel frames, DDP over gloo, launched by torchrun with c10d rendezvous on two nodes."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[rank {rank}] joined, world size {world}, node {os.environ.get('GROUP_RANK')}", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv1d(40, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                              nn.Linear(128, 12)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 801):
        x = torch.randn(64, 40, 98, generator=g)
        y = torch.randint(0, 12, (64,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 100 == 0:
            print(f"step {step}/800 loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
