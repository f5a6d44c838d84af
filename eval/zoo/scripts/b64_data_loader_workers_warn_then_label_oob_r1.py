"""Scene classifier (MLP over precomputed image embeddings) on DDP, 3 ranks. Each rank reads its own shard
(data/shard-<R>.pt: embeddings and labels from the labelling tool's export); DataLoader with 3 workers per rank."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 10


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    shard = torch.load(f"data/shard-{rank}.pt")
    ds = TensorDataset(shard["emb"], shard["label"])
    loader = DataLoader(ds, batch_size=32, shuffle=False, num_workers=3, persistent_workers=True)
    model = DDP(nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, NUM_CLASSES)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    if rank == 0:
        print(f"train: {len(ds)} samples per rank, {world} ranks, {len(loader)} batches/epoch", flush=True)
    step = 0
    for epoch in range(3):
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 10 == 0:
                print(f"[rank{rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    if rank == 0:
        torch.save(model.module.state_dict(), "scene_mlp.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
