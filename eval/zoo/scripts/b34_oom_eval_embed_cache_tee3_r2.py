"""Dual-encoder retriever (bag-of-words towers) trained with in-batch negatives, DDP over gloo, 3 processes.
Every 100 steps: recall@10 on the passage corpus; each rank encodes its third of the corpus and the full matrix
is all_gathered so that every rank can score its own queries against all passages."""
import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM = 30000, 512


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 256, mode="mean")
        self.proj = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, DIM))

    def forward(self, ids):
        return F.normalize(self.proj(self.emb(ids)), dim=-1)


class DualEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.p = Tower(), Tower()

    def forward(self, q, p):
        return self.q(q), self.p(p)


def batch(g, n, qlen=12, plen=64):
    topic = torch.randint(0, VOCAB - 1000, (n, 1), generator=g)
    q = topic + torch.randint(0, 1000, (n, qlen), generator=g)
    p = topic + torch.randint(0, 1000, (n, plen), generator=g)
    return q, p


@torch.no_grad()
def evaluate(model, rank, world, log, n_passages=360_000):
    model.eval()
    g = torch.Generator().manual_seed(1234 + rank)
    part = n_passages // world
    chunks = []
    for i in range(0, part, 4096):
        _, p = batch(g, min(4096, part - i))
        chunks.append(model.p(p))
    local = torch.cat(chunks)
    log.info("encoded %d passages (%.1f MB), gathering corpus", local.shape[0], local.numel() * 4 / 2**20)
    gathered = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(gathered, local)
    corpus = torch.cat(gathered)
    q, _ = batch(g, 512)
    scores = model.q(q) @ corpus.T
    top = scores.topk(10, dim=1).indices
    gold = torch.arange(512) + rank * part
    hits = (top == gold[:, None]).any(1).float().sum()
    dist.all_reduce(hits)
    model.train()
    return hits.item() / (512 * world)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s - rank{rank} - %(levelname)s - %(name)s - %(message)s")
    log = logging.getLogger("retriever")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(DualEncoder())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    log.info("world_size=%d params=%.1fM", world, sum(p.numel() for p in model.parameters()) / 1e6)
    for step in range(1, 401):
        q, p = batch(g, 64)
        qe, pe = model(q, p)
        loss = F.cross_entropy(qe @ pe.T / 0.05, torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.4f", step, loss.item())
        if step % 100 == 0:
            log.info("step %d: evaluating recall@10", step)
            r10 = evaluate(model.module, rank, world, log)
            log.info("step %d recall@10 %.4f", step, r10)
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
