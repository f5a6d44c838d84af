"""Retrieval model; each rank keeps a growing in-memory cache of hard negatives."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    enc = DDP(nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 128)))
    opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
    negatives = []  # hard-negative pool, never trimmed
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, 1001):
        q = torch.randn(64, 128, generator=g)
        d = q + 0.1 * torch.randn(64, 128, generator=g)
        zq, zd = enc(q), enc(d)
        scores = zq @ zd.t()
        loss = nn.functional.cross_entropy(scores, torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        negatives.append(torch.randn(4096, 256))  # 4 MiB per step
        if step % 10 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f} pool {len(negatives) * 4} MiB "
                  f"{(time.time() - t) * 100:.0f} ms/step", flush=True)
            t = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
