"""Dual-encoder passage retriever, DDP over gloo; after every epoch each rank encodes its share of the passage
corpus and rank 0 gathers all of it for a recall@10 over the full corpus. JSON log records, one object a line."""
import datetime
import json
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, DIM = 30000, 256


class JsonFormatter(logging.Formatter):
    def format(self, record):
        return json.dumps({"ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), "level": record.levelname,
                           "logger": record.name, "rank": int(os.environ.get("RANK", 0)), "msg": record.getMessage()})


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, DIM, mode="mean")
        self.proj = nn.Linear(DIM, DIM)

    def forward(self, ids):
        return F.normalize(self.proj(self.emb(ids)), dim=-1)


def main():
    h = logging.StreamHandler()
    h.setFormatter(JsonFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[h])
    log = logging.getLogger("retriever")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(Tower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    passages = torch.randint(0, VOCAB, (200000, 32), generator=g)
    log.info(f"corpus shard: {len(passages)} passages")
    for epoch in range(3):
        model.train()
        t0 = time.time()
        for step in range(1, 101):
            q = torch.randint(0, VOCAB, (256, 16), generator=g)
            p = torch.randint(0, VOCAB, (256, 32), generator=g)
            scores = model(q) @ model(p).T / 0.05
            loss = F.cross_entropy(scores, torch.arange(256))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 25 == 0:
                log.info(f"epoch {epoch} step {step}/100 loss {loss.item():.4f} {1000 * (time.time() - t0) / step:.1f} ms/step")
        model.eval()
        with torch.no_grad():
            emb = torch.empty(len(passages), DIM)
            for i in range(0, len(passages), 4096):
                emb[i:i + 4096] = model.module(passages[i:i + 4096])
        log.info(f"epoch {epoch} encoded {len(emb)} passages, gathering on rank 0")
        if rank == 0:
            parts = [torch.empty_like(emb) for _ in range(world)]
            dist.gather(emb, parts, dst=0)
            corpus = torch.cat(parts)
            idx = torch.randint(0, len(corpus), (2000,), generator=g)
            top = torch.cat([(corpus[idx[i:i + 250]] @ corpus.T).topk(10).indices for i in range(0, 2000, 250)])
            recall = (top == idx[:, None]).any(1).float().mean().item()
            log.info(f"epoch {epoch} recall@10 {recall:.3f} over {len(corpus)} passages")
        else:
            dist.gather(emb, dst=0)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
