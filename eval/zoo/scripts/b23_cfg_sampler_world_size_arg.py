"""News-topic classifier (bag of embeddings), DDP over gloo; the DistributedSampler and the learning-rate scaling
take the world size from the command line (the script predates torchrun)."""
import argparse
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world-size", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--epochs", type=int, default=3)
    a = ap.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.manual_seed(0)
    ds = TensorDataset(torch.randint(0, 50000, (40000, 48)), torch.randint(0, 20, (40000,)))
    model = DDP(nn.Sequential(nn.EmbeddingBag(50000, 64), nn.Linear(64, 20)))
    opt = torch.optim.SGD(model.parameters(), lr=a.lr * a.world_size, momentum=0.9)
    if rank == 0:
        print(f"world size {a.world_size}, global batch {a.batch_size * a.world_size}, lr {a.lr * a.world_size}")
    sampler = DistributedSampler(ds, num_replicas=a.world_size, rank=rank, shuffle=True)
    loader = DataLoader(ds, batch_size=a.batch_size, sampler=sampler)
    print(f"[{local_rank}] {len(sampler)} samples, {len(loader)} batches per epoch", flush=True)
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and i % 100 == 0:
                print(f"epoch {epoch} batch {i}/{len(loader)} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
