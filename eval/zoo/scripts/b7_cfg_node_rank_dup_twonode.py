"""Sentiment GRU, launched on two nodes with the cluster's launch script (one process per node)."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    print(f"[{os.uname().nodename}] RANK={os.environ['RANK']} WORLD_SIZE={os.environ['WORLD_SIZE']} "
          f"MASTER={os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(nn.GRU(32, 64, batch_first=True))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(300):
        x = torch.randn(16, 20, 32)
        loss = model(x)[0].pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
