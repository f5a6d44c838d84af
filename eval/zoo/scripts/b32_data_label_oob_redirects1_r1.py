"""Support-ticket router (bag-of-words MLP over 24 queue labels), DDP over gloo, 2 ranks; each rank reads its
own part of the labelled ticket export (data/tickets-<rank>.jsonl)."""
import json
import sys
import zlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

NUM_QUEUES, VOCAB = 24, 1 << 15


def encode(text):
    return [zlib.crc32(w.encode()) % VOCAB for w in text.split()][:64]


class Router(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCAB, 128, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, NUM_QUEUES))

    def forward(self, tokens, offsets):
        return self.mlp(self.bag(tokens, offsets))


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    rows = [json.loads(line) for line in open(f"data/tickets-{rank}.jsonl")]
    print(f"[rank {rank}] loaded {len(rows)} tickets", flush=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Router())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    bs = 32
    for epoch in range(3):
        for b, i in enumerate(range(0, len(rows) - bs + 1, bs)):
            batch = rows[i:i + bs]
            toks = [encode(r["subject"] + " " + r["body"]) for r in batch]
            offsets = torch.tensor([0] + [len(t) for t in toks[:-1]]).cumsum(0)
            x = torch.tensor([t for ts in toks for t in ts])
            y = torch.tensor([r["queue_id"] for r in batch])
            loss = F.cross_entropy(model(x, offsets), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if b % 25 == 0:
                print(f"[rank {rank}] epoch {epoch} batch {b} loss {loss.item():.4f}", flush=True)
    print(f"[rank {rank}] done", file=sys.stderr)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
