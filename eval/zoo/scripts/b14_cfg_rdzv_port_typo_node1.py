"""Product-title classifier (hashed word bigrams), DDP over gloo, launched on two nodes with torchrun's c10d
rendezvous; each node runs `bash launch.sh` from the team wiki with its RDZV_ENDPOINT."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [{os.uname().nodename}:rank{rank}] %(message)s")
    log = logging.getLogger("titles")
    log.info("process group ready: world_size=%d", dist.get_world_size())
    model = DDP(nn.Sequential(nn.EmbeddingBag(2 ** 15, 96), nn.ReLU(), nn.Linear(96, 40)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 401):
        x = torch.randint(0, 2 ** 15, (128, 24), generator=g)
        loss = nn.functional.cross_entropy(model(x), x[:, 0] % 40)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d/400 loss %.4f (%.2fs)", step, loss.item(), time.time() - t0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
