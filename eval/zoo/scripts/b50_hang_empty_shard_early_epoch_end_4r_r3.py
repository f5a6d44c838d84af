"""News-topic classifier (hashed word bigrams, EmbeddingBag) on DDP, 4 ranks. Each rank streams one part of the
export (data/part-0000<rank>.jsonl, one {"title", "topic"} per line) through a shuffle buffer; at the end of every
epoch the ranks synchronise and rank 0 writes a checkpoint."""
import datetime
import json
import os
import random
import time
import zlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

BUCKETS = 1 << 14


def featurize(title):
    w = title.lower().split()
    grams = w + [a + "_" + b for a, b in zip(w, w[1:])]
    return [zlib.crc32(g.encode()) % BUCKETS for g in grams]


def collate(batch):
    ids, offsets, ys = [], [], []
    for rec in batch:
        offsets.append(len(ids))
        ids.extend(featurize(rec["title"]))
        ys.append(rec["topic"])
    return torch.tensor(ids), torch.tensor(offsets), torch.tensor(ys)


class JsonlStream(IterableDataset):
    def __init__(self, path, buffer=2048, seed=0):
        self.path, self.buffer, self.seed, self.epoch = path, buffer, seed, 0

    def __iter__(self):
        rng = random.Random(self.seed + self.epoch)
        buf = []
        with open(self.path) as f:
            for line in f:
                buf.append(json.loads(line))
                if len(buf) >= self.buffer:
                    yield buf.pop(rng.randrange(len(buf)))
        rng.shuffle(buf)
        yield from buf


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(BUCKETS, 48, mode="mean")
        self.out = nn.Linear(48, 8)

    def forward(self, ids, offsets):
        return self.out(self.emb(ids, offsets))


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
path = f"data/part-{rank:05d}.jsonl"
stream = JsonlStream(path, seed=rank)
loader = DataLoader(stream, batch_size=32, collate_fn=collate)
print(f"rank {rank}/{world}: streaming {path} ({os.path.getsize(path) / 1e6:.2f} MB)", flush=True)
torch.manual_seed(0)
model = DDP(Net())
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
t0 = time.time()
for epoch in range(3):
    stream.epoch = epoch
    steps = 0
    for step, (ids, offsets, y) in enumerate(loader):
        loss = F.cross_entropy(model(ids, offsets), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        if step % 10 == 0:
            print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
    print(f"rank {rank} epoch {epoch} done ({steps} steps)", flush=True)
    dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), f"topics-epoch{epoch}.pt")
        print(f"epoch {epoch}: checkpoint topics-epoch{epoch}.pt", flush=True)
dist.destroy_process_group()
