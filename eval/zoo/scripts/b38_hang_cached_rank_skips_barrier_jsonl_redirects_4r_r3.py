"""Code-search embedding model. Each rank tokenizes its own slice of the raw corpus into cache/tok-<rank>.pt
on first use (slow: pure-python tokenizer), and the ranks wait for each other before training starts.
JSON-lines logs; torchrun writes each rank's output to its own files."""
import json
import os
import re
import zlib
import sys
import time
from datetime import datetime, timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", 0))


def log(msg, **kw):
    sys.stdout.write(json.dumps({"time": datetime.now().isoformat(timespec="seconds"), "rank": RANK, "msg": msg,
                                 **kw}) + "\n")


def tokenize(text, vocab_size=16384):
    return [zlib.crc32(t.encode()) % (vocab_size - 1) + 1 for t in re.findall(r"[A-Za-z_]+|\d+|\S", text)]


def prepare_cache(rank, world):
    path = f"cache/tok-{rank}.pt"
    if not os.path.exists(path):
        t0 = time.time()
        with open("data/snippets.txt") as fh:
            lines = [ln for i, ln in enumerate(fh) if i % world == rank]
        seqs = [tokenize(ln)[:64] for ln in lines]
        os.makedirs("cache", exist_ok=True)
        torch.save(seqs, path)
        log("tokenized", path=path, snippets=len(seqs), seconds=round(time.time() - t0, 1))
        dist.barrier()  # every rank has its cache before anyone trains
    else:
        log("cache hit", path=path)
    return torch.load(path)


class CodeEncoder(nn.Module):
    def __init__(self, vocab=16384, d=128):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, d, mode="mean", padding_idx=0)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return F.normalize(self.proj(self.emb(x)), dim=-1)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    log("start", world_size=world)
    seqs = prepare_cache(rank, world)
    x = torch.zeros(len(seqs), 64, dtype=torch.long)
    for i, s in enumerate(seqs):
        x[i, : len(s)] = torch.tensor(s)
    model = DDP(CodeEncoder())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    log("training", snippets=len(seqs))
    for step in range(1, 301):
        i = (step * 48) % (len(x) - 48)
        a, b = model(torch.cat([x[i:i + 48, :32], x[i:i + 48, 32:]])).split(48)
        loss = F.cross_entropy(a @ b.T / 0.05, torch.arange(48))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log("step", step=step, loss=round(loss.item(), 4))
    log("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
