"""Next-item recommender (embedding bag + MLP) trained with DDP, launched by the cluster's job template."""
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = logging.getLogger("recsys")

N_ITEMS, DIM, HIST = 20000, 64, 20


class NextItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.items = nn.EmbeddingBag(N_ITEMS, DIM, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(DIM, 256), nn.ReLU(), nn.Linear(256, DIM))

    def forward(self, hist):
        u = self.mlp(self.items(hist))
        return u @ self.items.weight[:2000].T  # scores over the 2000 candidate items of the day


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    logger.info(f"rank {rank}/{world} pid {os.getpid()} started")
    torch.manual_seed(rank)
    model = DDP(NextItem())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    t0 = time.time()
    for it in range(1, 3001):
        hist = torch.randint(0, N_ITEMS, (64, HIST))
        target = torch.randint(0, 2000, (64,))
        loss = nn.functional.cross_entropy(model(hist), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 50 == 0 and rank == 0:
            logger.info(f"iter {it}/3000 loss {loss.item():.4f} ({(time.time() - t0) / 50 * 1000:.1f} ms/iter)")
            t0 = time.time()
        if it % 1000 == 0 and rank == 0:
            torch.save(model.module.state_dict(), f"recsys_it{it}.pt")
            logger.info(f"saved recsys_it{it}.pt")
    logger.info(f"rank {rank} done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
