"""Two-tower retrieval model (user / item embedding towers, in-batch softmax) trained with DDP on two nodes, static
rendezvous (torchrun --nnodes 2 --node-rank K --master-addr/--master-port)."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class TwoTower(nn.Module):
    def __init__(self, users=50000, items=20000, d=64):
        super().__init__()
        self.u = nn.EmbeddingBag(users, d)
        self.i = nn.EmbeddingBag(items, d)

    def forward(self, u, i):
        return F.normalize(self.u(u), dim=-1) @ F.normalize(self.i(i), dim=-1).T


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank = dist.get_rank()
    torch.set_num_threads(1)
    print(f"[rank {rank}] local_rank {os.environ['LOCAL_RANK']} group_rank {os.environ['GROUP_RANK']}", flush=True)
    model = DDP(TwoTower())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 201):
        u = torch.randint(0, 50000, (128, 8), generator=g)
        i = torch.randint(0, 20000, (128, 4), generator=g)
        loss = F.cross_entropy(model(u, i) / 0.1, torch.arange(128))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
