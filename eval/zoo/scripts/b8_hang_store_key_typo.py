"""Word-level LM; rank 0 builds the shared vocabulary once and tells the other ranks through a side store."""
import datetime
import json
import os
import random

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def build_vocab(path):
    rng = random.Random(0)
    words = [f"w{rng.randrange(20000)}" for _ in range(200_000)]
    vocab = {w: i for i, w in enumerate(sorted(set(words)))}
    with open(path, "w") as f:
        json.dump(vocab, f)
    return len(vocab)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]) + 1, world,
                          is_master=(rank == 0), timeout=datetime.timedelta(seconds=20))
    if rank == 0:
        n = build_vocab("vocab.json")
        print(f"[rank 0] vocabulary: {n} words -> vocab.json")
        store.set("vocab-ready", "1")
    else:
        print(f"[rank {rank}] waiting for the vocabulary")
        store.wait(["vocab_ready"])
    with open("vocab.json") as f:
        vocab = json.load(f)
    model = DDP(nn.Sequential(nn.Embedding(len(vocab), 64), nn.Flatten(), nn.Linear(4 * 64, len(vocab))))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 201):
        x = torch.randint(0, len(vocab), (32, 5), generator=g)
        loss = nn.functional.cross_entropy(model(x[:, :4]), x[:, 4])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
