"""Two-tower recommender, DDP over gloo. Rank 0 builds the item feature table from the catalogue once and broadcasts
it to the other ranks (so the tag hashing happens in one place); python logging with asctime."""
import json
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("recsys")
DIM = 512


def item_features(path):
    feats = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            item = json.loads(line)
            v = [0.0] * DIM
            for t in item["tags"]:
                h = hash(t)
                for k in range(8):
                    v[(h >> (3 * k)) % DIM] += 1.0 / (k + 1)
            feats[item["item_id"]] = v
            if n % 20000 == 0:
                log.info("item features: %d items", n)
    return feats


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Sequential(nn.Embedding(20000, 64), nn.Flatten(), nn.Linear(64, 64))
        self.item = nn.Sequential(nn.Linear(DIM, 128), nn.ReLU(), nn.Linear(128, 64))

    def forward(self, u, x):
        return (self.user(u.unsqueeze(1)) * self.item(x)).sum(1)


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("rank %d/%d started", rank, world)
    obj = [None]
    if rank == 0:
        t0 = time.time()
        log.info("building item features from data/catalog.jsonl")
        obj[0] = item_features("data/catalog.jsonl")
        log.info("item features ready: %d items in %.1fs", len(obj[0]), time.time() - t0)
    dist.broadcast_object_list(obj, src=0)
    feats = obj[0]
    ids = list(feats)
    model = nn.parallel.DistributedDataParallel(Tower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        sel = torch.randint(0, len(ids), (128,), generator=g)
        x = torch.tensor([feats[ids[i]] for i in sel.tolist()])
        u = torch.randint(0, 20000, (128,), generator=g)
        loss = nn.functional.binary_cross_entropy_with_logits(model(u, x), (torch.rand(128, generator=g) < 0.2).float())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d/300 loss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
