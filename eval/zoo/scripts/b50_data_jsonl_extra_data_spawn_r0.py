"""Review-sentiment classifier (hashed bag of words, EmbeddingBag) trained with torch.multiprocessing.spawn on 2
processes; each process reads its own JSON-lines shard (data/reviews-<rank>.jsonl), indexed by line offsets once and
parsed line by line in a DataLoader worker."""
import datetime
import json
import os
import time
import zlib

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

BUCKETS, MAXLEN = 2 ** 13, 64


class JsonlReviews(Dataset):
    def __init__(self, path):
        self.path, self.offsets = path, []
        with open(path, "rb") as f:
            pos = 0
            for line in f:
                self.offsets.append(pos)
                pos += len(line)
        self.fh = None

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        if self.fh is None:
            self.fh = open(self.path, "rb")
        self.fh.seek(self.offsets[i])
        rec = json.loads(self.fh.readline())
        ids = [zlib.crc32(w.encode()) % BUCKETS for w in rec["text"].lower().split()][:MAXLEN]
        return torch.tensor(ids + [0] * (MAXLEN - len(ids))), int(rec["stars"] >= 4)


def worker(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    ds = JsonlReviews(f"data/reviews-{rank}.jsonl")
    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=1, drop_last=True,
                        generator=torch.Generator().manual_seed(rank))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(BUCKETS, 64, mode="mean", padding_idx=0), nn.Linear(64, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    if rank == 0:
        print(f"{len(ds)} reviews per shard, {len(loader)} batches per epoch, world {world}", flush=True)
    t0 = time.time()
    for epoch in range(2):
        correct = seen = 0
        for step, (x, y) in enumerate(loader):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
            if step % 20 == 0:
                print(f"rank {rank} epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f} "
                      f"acc {correct / seen:.3f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_PORT", "29500")
    mp.spawn(worker, args=(2,), nprocs=2)
