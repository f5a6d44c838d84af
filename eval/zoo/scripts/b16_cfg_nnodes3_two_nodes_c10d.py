"""Query-intent classifier (fastText-style bag of n-gram embeddings), DDP over gloo, launched on every node
with the team's multi-node command (c10d rendezvous)."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[{os.uname().nodename}] rank {rank}/{world} local_rank {os.environ['LOCAL_RANK']}", flush=True)
    model = DDP(nn.Sequential(nn.EmbeddingBag(50000, 64), nn.Linear(64, 24)))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 501):
        x = torch.randint(0, 50000, (128, 20), generator=g)
        y = x[:, 0] % 24
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
