"""Recommendation model (embedding tables + MLP), DDP over gloo, 3 processes; logs with timestamps."""
import datetime
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s %(levelname)s [%(process)d] %(message)s", level=logging.INFO)
log = logging.getLogger(__name__)


class DLRMish(nn.Module):
    def __init__(self, n_users=20000, n_items=5000, d=32):
        super().__init__()
        self.u = nn.EmbeddingBag(n_users, d, mode="sum")
        self.i = nn.EmbeddingBag(n_items, d, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(2 * d + 13, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, users, items, dense):
        return self.mlp(torch.cat([self.u(users), self.i(items), dense], 1)).squeeze(1)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(DLRMish())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, 1501):
        users = torch.randint(0, 20000, (256, 1), generator=g)
        items = torch.randint(0, 5000, (256, 3), generator=g)
        dense = torch.randn(256, 13, generator=g)
        y = (dense[:, 0] > 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(users, items, dense), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info(f"rank {rank} step {step} loss {loss.item():.4f} {(time.time() - t) * 1000 / 25:.1f} ms/step")
            t = time.time()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
