"""Two-node DDP smoke test of the sentiment model before the long run (gloo on CPU nodes)."""
import datetime
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[{socket.gethostname()}] rank {rank}/{world} local_rank {os.environ['LOCAL_RANK']} ready", flush=True)
    model = DDP(nn.Sequential(nn.EmbeddingBag(5000, 64), nn.Linear(64, 2)))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(200):
        x = torch.randint(0, 5000, (32, 40), generator=g)
        y = (x[:, 0] % 2).long()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
