"""Sentiment classifier (bag of embeddings) over review shards, DDP over gloo, 3 ranks; tqdm bar on rank 0,
epoch summaries from every rank."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    g = torch.Generator().manual_seed(0)
    toks = torch.randint(0, 5000, (24000, 32), generator=g)
    labels = (toks[:, :4].sum(1) % 2)
    ds = TensorDataset(toks, labels)
    sampler = DistributedSampler(ds, shuffle=True)
    dl = DataLoader(ds, batch_size=64, sampler=sampler, num_workers=1)
    model = DDP(nn.Sequential(nn.EmbeddingBag(5000, 64), nn.Linear(64, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(4):
        sampler.set_epoch(epoch)
        t0 = time.time()
        bar = tqdm(dl, desc=f"epoch {epoch}", disable=rank != 0, ncols=100)
        total = 0.0
        for i, (x, y) in enumerate(bar, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            bar.set_postfix(loss=f"{loss.item():.4f}")
            if i % 40 == 0:
                print(f"[rank{rank}] epoch {epoch} step {i}/{len(dl)} loss {loss.item():.4f}", flush=True)
        print(f"[rank{rank}] epoch {epoch} done: mean loss {total / len(dl):.4f} ({time.time() - t0:.1f}s)", flush=True)
        if rank == 0:
            torch.save(model.module.state_dict(), f"sentiment_epoch{epoch}.pt")
            print(f"[rank0] saved sentiment_epoch{epoch}.pt", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
