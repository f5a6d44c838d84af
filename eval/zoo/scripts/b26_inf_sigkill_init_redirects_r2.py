"""Next-basket recommender, DDP over gloo, 3 processes. Before training each rank builds its item co-occurrence
index from its own share of the order history (pure python), then trains; asctime logging with the rank."""
import collections
import logging
import os
import random
import time

import torch
import torch.distributed as dist
import torch.nn as nn

RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s [rank{RANK}] %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("basket")


def build_index(n_orders, seed):
    rng = random.Random(seed)
    co = collections.Counter()
    for k in range(n_orders):
        basket = sorted(rng.sample(range(20000), 6))
        for i in range(len(basket)):
            for j in range(i + 1, len(basket)):
                co[(basket[i], basket[j])] += 1
        if (k + 1) % 100000 == 0:
            log.info("co-occurrence index: %d/%d orders", k + 1, n_orders)
    return co


def main():
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    n_orders = [300000, 300000, 700000][RANK]  # rank 2 holds the two largest regions
    t0 = time.time()
    co = build_index(n_orders, RANK)
    log.info("index ready: %d pairs in %.1fs", len(co), time.time() - t0)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.EmbeddingBag(20000, 64), nn.Linear(64, 20000)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    for step in range(1, 301):
        x = torch.randint(0, 20000, (64, 6), generator=g)
        loss = nn.functional.cross_entropy(model(x[:, :5]), x[:, 5])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d/300 loss %.4f (world %d)", step, loss.item(), world)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
