"""Intent classifier on pre-featurised utterances; one .pt shard per rank from the export job."""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    shard = torch.load(f"data/intents/shard_{rank:02d}.pt")
    x, y = shard["features"], shard["intent"]
    print(f"rank {rank}: {len(x)} examples, {int(y.max()) + 1} intents", flush=True)
    model = DDP(nn.Sequential(nn.Linear(x.shape[1], 96), nn.ReLU(), nn.Dropout(0.1), nn.Linear(96, 21)))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(5):
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        for i in range(0, len(x) - 31, 32):
            idx = perm[i:i + 32]
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
