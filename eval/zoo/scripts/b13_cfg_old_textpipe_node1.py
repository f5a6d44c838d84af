"""Token tagging (NER-style) with a GRU tagger, DDP over gloo, 2 nodes. Tokenization and padding come from the team's
`textpipe` package (installed in the team environment each node activates)."""
import os
import random
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import textpipe

MAX_LEN = 48
N_TAGS = 9


class Tagger(nn.Module):
    def __init__(self, vocab=8000, dim=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.rnn = nn.GRU(dim, dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * dim, N_TAGS)

    def forward(self, ids):
        return self.out(self.rnn(self.emb(ids))[0])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[rank{rank}] world {world}, node {os.environ.get('GROUP_RANK')}", flush=True)
    with open("data/ner_train.tsv") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][rank::world]
    sents = [textpipe.encode(r[0]) for r in rows]
    tags = [[int(t) for t in r[1].split()] for r in rows]
    model = DDP(Tagger())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    rng = random.Random(rank)
    t0 = time.time()
    for step in range(1, 301):
        idx = rng.sample(range(len(sents)), 16)
        ids = textpipe.pad_batch([sents[i] for i in idx], max_len=MAX_LEN)
        y = textpipe.pad_batch([tags[i] for i in idx], max_len=MAX_LEN, pad_id=-100)
        loss = nn.functional.cross_entropy(model(ids).reshape(-1, N_TAGS), y.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f} {(time.time() - t0) / 25 * 1000:.0f}ms/it", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
