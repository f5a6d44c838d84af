"""Title generator pre-training (small GRU LM), DDP over gloo, 2 ranks. Rank 0 tokenizes the corpus into a shared
cache (cache/tokenized-train.pt) under a file lock so that concurrent jobs on the shared filesystem do not write it
twice; the other ranks wait in a barrier and then read the cache."""
import json
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from filelock import SoftFileLock
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("titlegen")
CACHE = "cache/tokenized-train.pt"


def tokenize_corpus():
    vocab, seqs = {"<pad>": 0}, []
    for line in open("data/titles.jsonl"):
        words = json.loads(line)["title"].lower().split()
        seqs.append([vocab.setdefault(w, len(vocab)) for w in words][:24])
    x = torch.zeros(len(seqs), 24, dtype=torch.long)
    for i, s in enumerate(seqs):
        x[i, : len(s)] = torch.tensor(s)
    return {"ids": x, "vocab_size": len(vocab)}


class TitleLM(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, 64)
        self.rnn = nn.GRU(64, 128, batch_first=True)
        self.out = nn.Linear(128, vocab_size)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    if rank == 0:
        os.makedirs("cache", exist_ok=True)
        with SoftFileLock(CACHE + ".lock"):
            if not os.path.exists(CACHE):
                log.info("tokenizing data/titles.jsonl into %s", CACHE)
                t0 = time.time()
                torch.save(tokenize_corpus(), CACHE)
                log.info("cache written in %.1fs", time.time() - t0)
    dist.barrier()
    data = torch.load(CACHE)
    log.info("rank %d: %d titles, vocabulary %d", rank, len(data["ids"]), data["vocab_size"])
    model = DDP(TitleLM(data["vocab_size"]))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = data["ids"][rank::dist.get_world_size()]
    for step in range(1, 301):
        b = ids[(step * 32) % (len(ids) - 32):][:32]
        loss = nn.functional.cross_entropy(model(b[:, :-1]).transpose(1, 2), b[:, 1:], ignore_index=0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("rank %d step %d/300 loss %.4f", rank, step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
