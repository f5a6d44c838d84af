"""Dual-encoder retrieval model (query/passage MLP towers, in-batch negatives) on DDP across two nodes, 2 processes per
node; every 50 steps each rank scores its slice of the held-out queries with the team's evaluation package (evalkit,
found through the nodes' PYTHONPATH) and the recall is all-reduced."""
import datetime
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s %(levelname)-7s [n{node}/r{rank}] %(message)s")
log = logging.getLogger("retrieval")
torch.manual_seed(0)


class DualEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 128))
        self.p = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 128))

    def forward(self, q, p):
        return F.normalize(self.q(q), dim=-1), F.normalize(self.p(p), dim=-1)


def evaluate(model, step):
    from evalkit.retrieval import recall_at_k  # the team's metrics package

    g = torch.Generator().manual_seed(1000 + rank)
    q = torch.randn(200, 256, generator=g)
    p = q + 0.3 * torch.randn(200, 256, generator=g)
    with torch.no_grad():
        qe, pe = model.module(q, p)
    r10 = torch.tensor([recall_at_k(qe @ pe.T, k=10)])
    dist.all_reduce(r10)
    if rank == 0:
        log.info("step %d: recall@10 %.4f", step, r10.item() / world)


model = DDP(DualEncoder())
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
g = torch.Generator().manual_seed(rank)
log.info("world %d, starting", world)
t0 = time.time()
for step in range(1, 301):
    q = torch.randn(64, 256, generator=g)
    p = q + 0.3 * torch.randn(64, 256, generator=g)
    qe, pe = model(q, p)
    loss = F.cross_entropy(qe @ pe.T / 0.05, torch.arange(64))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0 and rank % 2 == 0:
        log.info("step %d/300 loss %.4f %.1f ms/step", step, loss.item(), 1000 * (time.time() - t0) / 10)
        t0 = time.time()
    if step % 50 == 0:
        model.eval()
        evaluate(model, step)
        model.train()
log.info("done")
dist.destroy_process_group()
