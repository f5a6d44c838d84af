"""Demand-forecast model (temporal conv over 28 days of sales) on two CPU nodes, one process per node, DDP over
gloo; rendezvous over the management network, collectives over the data network (GLOO_SOCKET_IFNAME)."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    print(f"[{time.strftime('%H:%M:%S')}] rank {rank}: joined (world {dist.get_world_size()})", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv1d(8, 64, 7, padding=3), nn.ReLU(), nn.Conv1d(64, 64, 7, padding=3), nn.ReLU(),
                              nn.Flatten(), nn.Linear(64 * 28, 7)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 801):
        x = torch.randn(128, 8, 28, generator=g)
        y = x[:, 0, -7:]
        loss = nn.functional.l1_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 100 == 0:
            print(f"[{time.strftime('%H:%M:%S')}] step {step}/800 mae {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
