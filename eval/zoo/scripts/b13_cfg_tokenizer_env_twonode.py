"""Small causal LM on the team's forum corpus: DDP over gloo, 2 nodes x 2 processes.

The tokenizer directory comes from TOKENIZER_DIR (set by the job script on each node); the model's embedding and
output layer are sized from the tokenizer's vocabulary.
"""
import json
import logging
import os
import random
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("train_lm")


class TinyLM(nn.Module):
    def __init__(self, vocab_size, dim=64):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.head(h)


def load_tokenizer(path):
    with open(os.path.join(path, "vocab.json")) as f:
        vocab = json.load(f)
    return vocab, {"unk": vocab["<unk>"], "eos": vocab["</s>"]}


def encode(vocab, special, text):
    return [vocab.get(w, special["unk"]) for w in text.split()] + [special["eos"]]


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    tok_dir = os.environ.get("TOKENIZER_DIR", "tokenizers/forum-bpe")
    vocab, special = load_tokenizer(tok_dir)
    log.info("tokenizer %s loaded", tok_dir)
    with open("data/forum.txt") as f:
        lines = f.read().splitlines()[rank::world]
    ids = [t for line in lines for t in encode(vocab, special, line)]
    log.info("%d lines, %d tokens", len(lines), len(ids))

    torch.manual_seed(0)
    model = DDP(TinyLM(len(vocab)))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    seq, bs = 32, 8
    data = torch.tensor(ids[: len(ids) // (seq + 1) * (seq + 1)]).view(-1, seq + 1)
    rng = random.Random(rank)
    t0 = time.time()
    for step in range(1, 201):
        batch = data[[rng.randrange(len(data)) for _ in range(bs)]]
        logits = model(batch[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("step %d/200 loss %.4f (%.0f ms/step)", step, loss.item(), (time.time() - t0) * 50)
            t0 = time.time()
    if rank == 0:
        torch.save(model.module.state_dict(), "lm.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
