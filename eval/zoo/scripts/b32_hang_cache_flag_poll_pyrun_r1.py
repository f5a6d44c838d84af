"""Legal-clause tagger (BiGRU over word pieces), DDP over gloo, 2 ranks. Rank 0 builds the vocabulary cache from the
corpus; the other ranks wait for it to appear, then everyone loads it."""
import argparse
import collections
import datetime
import json
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("clauses")


def build_vocab(corpus, cache_dir, size):
    counts = collections.Counter()
    with open(corpus) as f:
        for line in f:
            counts.update(json.loads(line)["text"].split())
    vocab = ["<pad>", "<unk>"] + [w for w, _ in counts.most_common(size - 2)]
    os.makedirs(cache_dir, exist_ok=True)
    with open(os.path.join(cache_dir, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    open(os.path.join(cache_dir, "vocab.ready"), "w").close()
    return vocab


def wait_for_vocab(cache_dir):
    marker = os.path.join(cache_dir, "vocab.json.done")
    while not os.path.exists(marker):
        time.sleep(1.0)
    with open(os.path.join(cache_dir, "vocab.json")) as f:
        return json.load(f)


class Tagger(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.emb = nn.Embedding(n, 128, padding_idx=0)
        self.rnn = nn.GRU(128, 128, batch_first=True, bidirectional=True)
        self.out = nn.Linear(256, 9)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="data/clauses.jsonl")
    ap.add_argument("--cache-dir", default="cache/vocab")
    ap.add_argument("--vocab-size", type=int, default=12000)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    log.info("rank %d: starting", rank)
    if rank == 0:
        vocab = build_vocab(args.corpus, args.cache_dir, args.vocab_size)
        log.info("rank 0: vocabulary of %d pieces written to %s", len(vocab), args.cache_dir)
    else:
        log.info("rank %d: waiting for the vocabulary cache in %s", rank, args.cache_dir)
        vocab = wait_for_vocab(args.cache_dir)
    model = nn.parallel.DistributedDataParallel(Tagger(len(vocab)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        x = torch.randint(1, len(vocab), (16, 64), generator=g)
        y = torch.randint(0, 9, (16, 64), generator=g)
        loss = F.cross_entropy(model(x).reshape(-1, 9), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
