"""Comment classifier; after each epoch every rank reports a few stats, gathered with all_gather_object."""
import datetime
import json
import os
import re

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

URL_RE = re.compile(r"https?://\S+")
VOCAB = 4096


def encode(text):
    ids = [hash(w) % VOCAB for w in text.lower().split()][:24]
    return ids + [0] * (24 - len(ids))


def run(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=15))
    rows = [json.loads(line) for line in open(f"data/comments_{rank}.jsonl")]
    model = DDP(nn.Sequential(nn.EmbeddingBag(VOCAB, 64), nn.Linear(64, 3)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    bs = 32
    for epoch in range(3):
        stats = {"rank": rank, "n": 0, "loss": 0.0, "first_url": None}
        for i in range(0, len(rows) - bs + 1, bs):
            batch = rows[i:i + bs]
            x = torch.tensor([encode(r["text"]) for r in batch])
            y = torch.tensor([r["label"] for r in batch])
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            stats["n"] += len(batch)
            stats["loss"] += loss.item() * len(batch)
            if stats["first_url"] is None:
                for r in batch:
                    m = URL_RE.search(r["text"])
                    if m:
                        stats["first_url"] = m  # for the spam report
                        break
            if (i // bs) % 10 == 0:
                print(f"rank {rank} epoch {epoch} batch {i // bs} loss {loss.item():.4f}")
        gathered = [None] * world
        dist.all_gather_object(gathered, stats)
        if rank == 0:
            tot = sum(s["n"] for s in gathered)
            print(f"epoch {epoch}: mean loss {sum(s['loss'] for s in gathered) / tot:.4f} over {tot} comments")
    dist.destroy_process_group()


if __name__ == "__main__":
    world = 3
    mp.spawn(run, args=(world, int(os.environ.get("PORT", "29500"))), nprocs=world)
