import datetime
import random
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def dedup(docs):
    """Drop near-duplicate documents (Jaccard over word sets)."""
    kept = []
    for d in docs:
        s = set(d.split())
        if all(len(s & set(k.split())) / len(s | set(k.split())) < 0.8 for k in kept):
            kept.append(d)
    return kept


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(torch.nn.Linear(32, 32))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rng = random.Random(rank)
    words = [f"w{i}" for i in range(5000)]
    for epoch in range(3):
        n_docs = 300 if not (rank == 1 and epoch == 1) else 30000  # rank 1's second file is a big crawl dump
        docs = [" ".join(rng.choice(words) for _ in range(20)) for _ in range(n_docs)]
        t = time.time()
        docs = dedup(docs)
        print(f"rank {rank} epoch {epoch}: {len(docs)} docs after dedup ({time.time() - t:.1f}s)", flush=True)
        for step in range(20):
            loss = model(torch.randn(8, 32)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
