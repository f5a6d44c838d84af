"""Two-tower recommender, DDP over gloo, 2 nodes x 2 ranks (torchrun static rendezvous). Each rank keeps a cache of
user-history embeddings for hard-negative mining, capped at `--cache-steps` steps of history."""
import argparse
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TwoTower(nn.Module):
    def __init__(self, n_users=20000, n_items=20000, d=64):
        super().__init__()
        self.u = nn.Embedding(n_users, d)
        self.i = nn.Embedding(n_items, d)
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))

    def forward(self, users, items):
        return (self.mlp(self.u(users)) * self.i(items)).sum(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--cache-steps", type=int, default=80)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    node = int(os.environ.get("GROUP_RANK", 0))
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [node{node} rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("recsys")
    log.info("world_size=%d local_rank=%s", world, os.environ.get("LOCAL_RANK"))
    torch.manual_seed(0)
    model = DDP(TwoTower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    history = []  # hard-negative pool: per step, the batch's user histories (8 MiB)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        users = torch.randint(0, 20000, (256,), generator=g)
        items = torch.randint(0, 20000, (256,), generator=g)
        y = (users % 7 == items % 7).float()
        hist = torch.randn(256, 128, 64, generator=g)  # 8 MiB of history embeddings
        history.append(hist)
        if len(history) > args.cache_steps:
            history.pop(0)
        loss = nn.functional.binary_cross_entropy_with_logits(model(users, items), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("step %d/%d loss %.4f neg_pool=%d %.1f ms/step", step, args.steps, loss.item(), len(history),
                     (time.time() - t0) * 100)
            t0 = time.time()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
