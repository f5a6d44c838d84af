"""Word-level LSTM language model on forum posts, DDP over gloo. The vocabulary (token -> id and counts) is built
once from the corpus and cached next to it as JSON; later runs load the cache."""
import collections
import datetime
import json
import logging
import os
import random
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
logging.basicConfig(format="%(asctime)s | %(levelname)s | rank %(rank)s | %(message)s", level=logging.INFO)
log = logging.LoggerAdapter(logging.getLogger("forumlm"), {"rank": RANK})
CACHE = "cache/vocab-forum-v2.json"


def corpus_lines():
    with open("data/forum_posts.txt") as f:
        for line in f:
            yield line.split()


def build_vocab():
    counts, bigrams = collections.Counter(), collections.Counter()
    for words in corpus_lines():
        counts.update(words)
        bigrams.update(zip(words, words[1:]))
    itos = ["<pad>", "<unk>"] + [w for w, _ in counts.most_common(20000)]
    return {"itos": itos, "stoi": {w: i for i, w in enumerate(itos)}, "counts": dict(counts),
            "bigrams": {f"{a} {b}": c for (a, b), c in bigrams.items()}}  # for the n-gram baseline


def load_or_build_vocab():
    if os.path.exists(CACHE):
        log.info("loading cached vocabulary %s", CACHE)
        with open(CACHE) as f:
            return json.load(f)
    if RANK == 0:
        log.info("no vocabulary cache, building it from data/forum_posts.txt")
        vocab = build_vocab()
        os.makedirs(os.path.dirname(CACHE), exist_ok=True)
        with open(CACHE, "w") as f:
            json.dump(vocab, f, indent=1, ensure_ascii=False)
        log.info("vocabulary: %d entries, cached to %s", len(vocab["itos"]), CACHE)
        return vocab
    while not os.path.exists(CACHE):  # rank 0 is building it
        time.sleep(0.5)
    with open(CACHE) as f:
        return json.load(f)


class LM(nn.Module):
    def __init__(self, n, d=128):
        super().__init__()
        self.emb = nn.Embedding(n, d)
        self.rnn = nn.LSTM(d, d, batch_first=True)
        self.out = nn.Linear(d, n)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    vocab = load_or_build_vocab()
    stoi = vocab["stoi"]
    ids = [stoi.get(w, 1) for i, words in enumerate(corpus_lines()) if i % dist.get_world_size() == RANK
           for w in words][:400_000]
    data = torch.tensor(ids)
    model = DDP(LM(len(vocab["itos"])))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    rng = random.Random(RANK)
    for step in range(1, 101):
        starts = [rng.randrange(0, data.numel() - 33) for _ in range(16)]
        x = torch.stack([data[s : s + 32] for s in starts])
        y = torch.stack([data[s + 1 : s + 33] for s in starts])
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("step %d loss %.3f ppl %.1f", step, loss.item(), loss.exp().item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
