"""Tabular fraud model (MLP with embeddings), DDP over gloo, torch.multiprocessing.spawn with 2 processes;
every process prints its own iteration time every 20 iterations."""
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

ITERS = 450


class Fraud(nn.Module):
    def __init__(self):
        super().__init__()
        self.merchant = nn.Embedding(5000, 32)
        self.net = nn.Sequential(nn.Linear(32 + 24, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                 nn.Linear(512, 1))

    def forward(self, m, x):
        return self.net(torch.cat([self.merchant(m), x], -1)).squeeze(-1)


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = DDP(Fraud())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for it in range(1, ITERS + 1):
        m = torch.randint(0, 5000, (1024,), generator=g)
        x = torch.randn(1024, 24, generator=g)
        y = (x[:, 0] + 0.1 * (m % 7) > 1.2).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(m, x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 20 == 0:
            dt = (time.time() - t0) / 20 * 1000
            print(f"[{time.strftime('%H:%M:%S')}] rank {rank} it {it}/{ITERS} loss {loss.item():.4f} | {dt:.1f} ms/it",
                  flush=True)
            t0 = time.time()
    dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), "fraud_mlp.pt")
        print("saved fraud_mlp.pt", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    port = int(os.environ.get("PORT", "29500"))
    mp.spawn(worker, args=(world, port), nprocs=world)
