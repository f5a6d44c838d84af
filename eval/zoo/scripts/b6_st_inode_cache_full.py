"""Text classifier that caches each tokenized example as its own file (so restarts skip tokenization)."""
import datetime
import hashlib
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

CACHE = os.environ.get("TOKEN_CACHE", "/scratch/token_cache")
VOCAB = 5000


def tokenize(text):
    return [int(hashlib.md5(w.encode()).hexdigest()[:6], 16) % VOCAB for w in text.split()][:64]


class CachedText(Dataset):
    def __init__(self, lines, rank):
        self.lines = lines
        self.dir = os.path.join(CACHE, f"rank{rank}")
        os.makedirs(self.dir, exist_ok=True)

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        path = os.path.join(self.dir, f"{i:07d}.pt")
        if os.path.exists(path):
            ids = torch.load(path)
        else:
            ids = torch.tensor(tokenize(self.lines[i][1]) + [0] * 64)[:64]
            torch.save(ids, path)
        return ids, self.lines[i][0]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    with open("data/reviews.tsv") as f:
        rows = [(int(l.split("\t")[0]), l.split("\t")[1]) for l in f]
    rows = rows[rank::world]
    loader = DataLoader(CachedText(rows, rank), batch_size=32, shuffle=False)
    model = DDP(nn.Sequential(nn.EmbeddingBag(VOCAB, 64), nn.Linear(64, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step, (ids, y) in enumerate(loader, 1):
        loss = nn.functional.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank{rank}] step {step}/{len(loader)} loss {loss.item():.3f} {time.time() - t0:.1f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
