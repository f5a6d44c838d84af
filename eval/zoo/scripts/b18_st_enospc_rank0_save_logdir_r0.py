"""Recommendation model (two embedding tables + MLP), DDP over gloo, 2 ranks. Rank 0 writes a full checkpoint
(model + optimizer) every 150 steps to the shared checkpoint volume; the other ranks wait for it."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s [rank{RANK}] %(levelname)s: %(message)s", level=logging.INFO)
log = logging.getLogger("recsys")


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.users = nn.Embedding(20000, 48)
        self.items = nn.Embedding(12000, 48)
        self.mlp = nn.Sequential(nn.Linear(96, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, u, i):
        return self.mlp(torch.cat([self.users(u), self.items(i)], 1)).squeeze(1)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    model = DDP(TwoTower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    t0 = time.time()
    for step in range(1, 751):
        u, i = torch.randint(0, 20000, (512,), generator=g), torch.randint(0, 12000, (512,), generator=g)
        loss = nn.functional.binary_cross_entropy_with_logits(model(u, i), ((u + i) % 3 == 0).float())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info(f"step {step}/750 loss {loss.item():.4f} ({(time.time() - t0) / 25 * 1000:.0f} ms/step)")
            t0 = time.time()
        if step % 150 == 0:
            if RANK == 0:
                path = f"checkpoints/recsys/step_{step:06d}.pt"
                torch.save({"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step}, path)
                log.info(f"saved {path}")
            dist.barrier()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
