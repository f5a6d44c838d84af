"""Mean-pooled bag-of-embeddings sentiment model; texts are cleaned (URLs, mentions, stop words removed)
before tokenisation. Stops on a non-finite loss."""
import json
import math
import re

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STOP = set("the a an and or of to is it this that was in on at for with rt".split())
URL = re.compile(r"https?://\S+|@\w+")


def clean(text):
    return [w for w in URL.sub(" ", text.lower()).split() if w not in STOP]


class MeanPool(nn.Module):
    def __init__(self, vocab=2048, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.fc = nn.Linear(d, 2)

    def forward(self, ids, lengths):
        e = self.emb(ids)
        mask = (torch.arange(ids.shape[1])[None] < lengths[:, None]).float()
        pooled = (e * mask[..., None]).sum(1) / lengths[:, None]  # mean over the real tokens
        return self.fc(pooled)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    rows = [json.loads(line) for line in open(f"data/tweets_{rank}.jsonl")]
    docs = [([hash(w) % 2047 + 1 for w in clean(r["text"])], r["label"]) for r in rows]
    model = DDP(MeanPool())
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    bs = 32
    for step in range(len(docs) // bs):
        batch = docs[step * bs:(step + 1) * bs]
        L = max(1, max(len(t) for t, _ in batch))
        ids = torch.zeros(len(batch), L, dtype=torch.long)
        for i, (t, _) in enumerate(batch):
            ids[i, :len(t)] = torch.tensor(t, dtype=torch.long)
        lengths = torch.tensor([len(t) for t, _ in batch], dtype=torch.float)
        y = torch.tensor([lab for _, lab in batch])
        loss = nn.functional.cross_entropy(model(ids, lengths), y)
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"rank {rank}: loss is {loss.item()} at step {step}")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
