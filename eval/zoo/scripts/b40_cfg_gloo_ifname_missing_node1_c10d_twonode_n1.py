"""Demand forecaster (GRU over 48 hourly readings -> next 24 h) for the grid team, DDP over gloo on the CPU
partition. Two nodes, two workers each, c10d rendezvous; the nodes' profile sets GLOO_SOCKET_IFNAME."""
import os
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Forecaster(nn.Module):
    def __init__(self, feats=6, hidden=128):
        super().__init__()
        self.gru = nn.GRU(feats, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, 24)

    def forward(self, x):
        h, _ = self.gru(x)
        return self.out(h[:, -1])


def main():
    node = int(os.environ["GROUP_RANK"])
    rank = int(os.environ["RANK"])
    print(f"[{socket.gethostname()} node{node} rank{rank}] init gloo (GLOO_SOCKET_IFNAME="
          f"{os.environ.get('GLOO_SOCKET_IFNAME', '')})", flush=True)
    dist.init_process_group("gloo", timeout=timedelta(seconds=25))
    world = dist.get_world_size()
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(4096, 48, 6, generator=g)
    y = x[:, -24:, 0] * 0.8 + 0.1 * torch.randn(4096, 24, generator=g)
    model = DDP(Forecaster())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 201):
        idx = torch.randint(0, 4096, (64,), generator=g)
        loss = F.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0 and rank == 0:
            print(f"[node{node} rank{rank}] step {step}/200 mse {loss.item():.4f} world {world} "
                  f"{(time.time() - t0) * 40:.0f} ms/step", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
