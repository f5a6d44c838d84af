"""Review-rating regressor (hashed n-grams -> MLP), DDP over gloo. Each rank tokenizes its own shard of the review
dump before training (the slow part of start-up)."""
import json
import os
import time
import zlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

BUCKETS = 2 ** 16


def featurize(text):
    toks = text.lower().split()
    grams = toks + [a + " " + b for a, b in zip(toks, toks[1:])]
    return [zlib.crc32(g.encode()) % BUCKETS for g in grams][:256]


class Rater(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(BUCKETS, 64)
        self.out = nn.Linear(64, 1)

    def forward(self, ids, offsets):
        return self.out(self.bag(ids, offsets)).squeeze(1)


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[rank{rank}] process group ready (world {world}, pid {os.getpid()})")
    path = f"data/reviews-{rank}.jsonl"
    t0 = time.time()
    print(f"[rank{rank}] tokenizing {path}")
    feats, ys = [], []
    with open(path) as f:
        for i, line in enumerate(f):
            r = json.loads(line)
            feats.append(torch.tensor(featurize(r["text"])))
            ys.append(float(r["stars"]))
            if (i + 1) % 4000 == 0:
                print(f"[rank{rank}] tokenized {i + 1} reviews ({time.time() - t0:.1f}s)")
    print(f"[rank{rank}] {len(feats)} reviews ready in {time.time() - t0:.1f}s")
    model = nn.parallel.DistributedDataParallel(Rater())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 301):
        idx = torch.randint(0, len(feats), (32,))
        bag = torch.cat([feats[i] for i in idx])
        offs = torch.tensor([0] + [len(feats[i]) for i in idx[:-1]]).cumsum(0)
        loss = F.mse_loss(model(bag, offs), torch.tensor([ys[i] for i in idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"[rank{rank}] step {step} mse {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
