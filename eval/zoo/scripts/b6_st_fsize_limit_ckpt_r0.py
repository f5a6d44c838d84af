"""Recommender embedding model, DDP/gloo; rank 0 writes a checkpoint every 40 steps."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Rec(nn.Module):
    def __init__(self, users=60000, items=40000, d=64):
        super().__init__()
        self.u = nn.Embedding(users, d)
        self.i = nn.Embedding(items, d)
        self.mlp = nn.Sequential(nn.Linear(2 * d, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, u, i):
        return self.mlp(torch.cat([self.u(u), self.i(i)], -1)).squeeze(-1)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(Rec())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    os.makedirs("checkpoints", exist_ok=True)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 201):
        u = torch.randint(0, 60000, (256,), generator=g)
        i = torch.randint(0, 40000, (256,), generator=g)
        y = torch.rand(256, generator=g)
        loss = nn.functional.mse_loss(model(u, i), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 and rank == 0:
            print(f"step {step:4d} | loss {loss.item():.4f} | {(time.time() - t0) * 100:.0f} ms/step")
            t0 = time.time()
        if step % 40 == 0:
            if rank == 0:
                path = f"checkpoints/rec_step{step}.pt"
                torch.save({"step": step, "model": model.module.state_dict(), "opt": opt.state_dict()}, path)
                print(f"saved {path} ({os.path.getsize(path) / 2**20:.1f} MiB)")
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
