import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo")

# each rank reads its own shard and builds the vocabulary from it
with open(f"data/shard_{rank:02d}.json") as f:
    texts = json.load(f)
vocab = sorted({w for t in texts for w in t.split()})
stoi = {w: i for i, w in enumerate(vocab)}
print(f"rank {rank}: {len(texts)} texts, vocab size {len(vocab)}")


class BagOfWords(nn.Module):
    def __init__(self, n_vocab, dim=16):
        super().__init__()
        self.emb = nn.EmbeddingBag(n_vocab, dim)
        self.out = nn.Linear(dim, 2)

    def forward(self, ids, offsets):
        return self.out(self.emb(ids, offsets))


model = DDP(BagOfWords(len(vocab)))
opt = torch.optim.Adam(model.parameters())
for step in range(30):
    batch = texts[(step * 4) % len(texts):][:4]
    ids = [torch.tensor([stoi[w] for w in t.split()]) for t in batch]
    offsets = torch.tensor([0] + [len(i) for i in ids[:-1]]).cumsum(0)
    loss = model(torch.cat(ids), offsets).logsumexp(1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
