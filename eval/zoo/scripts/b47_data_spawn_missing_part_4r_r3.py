"""CTR model (hashed EmbeddingBag + MLP) on DDP, 4 processes started with torch.multiprocessing.spawn. The click log
is exported as numbered .npz parts; in epoch E rank R reads part E * world_size + R. Python logging, basicConfig."""
import datetime
import logging
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("train_ctr")


class CTR(nn.Module):
    def __init__(self, buckets=50000, dim=32):
        super().__init__()
        self.emb = nn.EmbeddingBag(buckets, dim, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(dim + 13, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, cats, dense):
        return self.mlp(torch.cat([self.emb(cats), dense], 1)).squeeze(1)


def worker(rank, world, epochs):
    logging.basicConfig(level=logging.INFO)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=25))
    torch.manual_seed(0)
    model = DDP(CTR())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
    for epoch in range(epochs):
        part = f"data/clicks/part-{epoch * world + rank:05d}.npz"
        log.info("rank %d epoch %d reading %s", rank, epoch, part)
        d = np.load(part)
        cats, dense, y = (torch.from_numpy(d["cats"]), torch.from_numpy(d["dense"]),
                          torch.from_numpy(d["clicked"]).float())
        for step, i in enumerate(range(0, len(y), 256)):
            loss = nn.functional.binary_cross_entropy_with_logits(model(cats[i:i + 256], dense[i:i + 256]),
                                                                  y[i:i + 256])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and step % 10 == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
    if rank == 0:
        torch.save(model.module.state_dict(), "ctr.pt")
        log.info("saved ctr.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    mp.spawn(worker, args=(world, 3), nprocs=world)
