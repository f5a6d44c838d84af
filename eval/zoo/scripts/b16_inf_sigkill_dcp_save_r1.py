"""Next-item recommender (embedding tables + MLP), DDP over gloo, 2 ranks; sharded checkpoints with
torch.distributed.checkpoint every 50 steps. Logging with asctime, every rank."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("recsys")


class Model(nn.Module):
    def __init__(self, n_items=60000, dim=64):
        super().__init__()
        self.items = nn.Embedding(n_items, dim)
        self.mlp = nn.Sequential(nn.Linear(4 * dim, 256), nn.ReLU(), nn.Linear(256, dim))

    def forward(self, hist):
        h = self.items(hist).flatten(1)
        return self.mlp(h) @ self.items.weight[:2048].T


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    torch.manual_seed(0)
    model = DDP(Model())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    log.info("model %.1fM params, world size %d", sum(p.numel() for p in model.parameters()) / 1e6,
             dist.get_world_size())
    t0 = time.time()
    for step in range(1, 301):
        hist = torch.randint(0, 60000, (128, 4), generator=g)
        target = hist[:, -1] % 2048
        loss = nn.functional.cross_entropy(model(hist), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("step %d/300 loss %.4f (%.1f ms/step)", step, loss.item(), (time.time() - t0) * 50)
            t0 = time.time()
        if step % 50 == 0:
            path = os.path.join("ckpt", f"step_{step:06d}")
            log.info("saving checkpoint to %s", path)
            ts = time.time()
            dcp.save({"model": model.module.state_dict(), "optim": opt.state_dict()}, checkpoint_id=path)
            log.info("checkpoint %s saved in %.2fs", path, time.time() - ts)
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
