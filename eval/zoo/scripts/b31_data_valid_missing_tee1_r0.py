"""FAQ retrieval model (dual encoder over hashed tokens), DDP over gloo. Rank 0 tokenizes the train and validation
sets into cache/ while the other ranks wait at a barrier, then every rank loads the cache."""
import json
import os
import time
import zlib
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

BUCKETS, LEN = 50000, 32


def tok(text):
    ids = [zlib.crc32(w.encode()) % BUCKETS for w in text.lower().split()][:LEN]
    return ids + [0] * (LEN - len(ids))


def build_cache(split):
    path = f"data/{split}.jsonl"
    q, a = [], []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            q.append(tok(r["question"]))
            a.append(tok(r["answer"]))
    torch.save({"q": torch.tensor(q), "a": torch.tensor(a)}, f"cache/{split}.pt")
    return len(q)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(BUCKETS, 128, padding_idx=0)
        self.proj = nn.Linear(128, 128)

    def forward(self, x):
        return F.normalize(self.proj(self.emb(x)), dim=-1)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world} started, pid {os.getpid()}", flush=True)
    if rank != 0:
        dist.barrier()  # wait for rank 0 to build the cache
    else:
        os.makedirs("cache", exist_ok=True)
        t0 = time.time()
        for split in ("train", "valid"):
            n = build_cache(split)
            print(f"rank 0: tokenized {split}: {n} pairs ({time.time() - t0:.1f}s)", flush=True)
        dist.barrier()
    train = torch.load("cache/train.pt")
    valid = torch.load("cache/valid.pt")
    model = nn.parallel.DistributedDataParallel(Encoder())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 401):
        idx = torch.randint(0, len(train["q"]), (64,), generator=g)
        sims = model(train["q"][idx]) @ model(train["a"][idx]).T / 0.05
        loss = F.cross_entropy(sims, torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            with torch.no_grad():
                vs = model.module(valid["q"][:256]) @ model.module(valid["a"][:256]).T
                acc = (vs.argmax(1) == torch.arange(256)).float().mean().item()
            print(f"rank {rank} step {step} loss {loss.item():.4f} valid@1 {acc:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
