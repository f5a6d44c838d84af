"""Named-entity tagger (BiGRU) over news sentences, DDP over gloo, 3 ranks. Every rank builds the character and
label vocabularies from the corpus and tokenizes its part before training (a few seconds); logging with asctime."""
import logging
import os
import random
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", 0))
logging.basicConfig(format=f"%(asctime)s - %(levelname)s - %(name)s - [rank{RANK}] %(message)s", level=logging.INFO)
log = logging.getLogger("ner")
TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


def corpus(n, seed):
    rng = random.Random(seed)
    syll = ["ka", "to", "ri", "men", "sa", "lo", "ven", "dra", "ul", "os", "ne", "th"]
    for _ in range(n):
        words = ["".join(rng.choice(syll) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(6, 24))]
        yield words, [rng.choice(TAGS) for _ in words]


class Tagger(nn.Module):
    def __init__(self, nchars, ntags):
        super().__init__()
        self.emb = nn.Embedding(nchars, 48)
        self.rnn = nn.GRU(48, 64, batch_first=True, bidirectional=True)
        self.out = nn.Linear(128, ntags)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("world size %d, building vocabularies from data/news-ner (120000 sentences)", world)
    t0 = time.time()
    chars, seqs = {"<pad>": 0, "<unk>": 1}, []
    for i, (words, tags) in enumerate(corpus(120000, 7), 1):
        ids = []
        for w in words:
            for c in w:
                ids.append(chars.setdefault(c, len(chars)))
        if i % world == rank:
            seqs.append((ids[:64], [TAGS.index(t) for t in tags][:64]))
        if i % 20000 == 0:
            log.info("tokenized %d/120000 sentences (%.1fs)", i, time.time() - t0)
    log.info("vocabulary: %d characters, %d tags; %d sentences on this rank", len(chars), len(TAGS), len(seqs))
    model = DDP(Tagger(len(chars), len(TAGS)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 301):
        batch = seqs[(step * 32) % len(seqs):][:32]
        x = torch.zeros(len(batch), 64, dtype=torch.long)
        y = torch.full((len(batch), 64), -100, dtype=torch.long)
        for j, (ids, tags) in enumerate(batch):
            x[j, : len(ids)] = torch.tensor(ids)
            y[j, : len(tags)] = torch.tensor(tags)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, len(TAGS)), y[:, : logits.size(1)].reshape(-1),
                                           ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d/300 loss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
