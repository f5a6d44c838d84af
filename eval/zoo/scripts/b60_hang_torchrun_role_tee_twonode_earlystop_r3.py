"""Sequence tagger (GRU) on DDP, two nodes x 2 processes with torchrun. Each rank validates on its own validation
shard after every epoch and stops early when its validation loss has not improved for `PATIENCE` epochs."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

PATIENCE = 1
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 64)
        self.rnn = nn.GRU(64, 64, batch_first=True)
        self.out = nn.Linear(64, 9)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def make(n, seed, noisy=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 1000, (n, 20), generator=g)
    y = x % 9 if not noisy else torch.randint(0, 9, (n, 20), generator=g)
    return x, y


train_x, train_y = make(640, rank)
# validation shards come from the annotation vendor, one per rank
val_x, val_y = make(128, 100 + rank, noisy=(rank == 3))
model = DDP(Tagger())
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
best, bad = float("inf"), 0
for epoch in range(20):
    model.train()
    for it in range(0, 640, 32):
        out = model(train_x[it:it + 32])
        loss = F.cross_entropy(out.reshape(-1, 9), train_y[it:it + 32].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        val = F.cross_entropy(model.module(val_x).reshape(-1, 9), val_y.reshape(-1)).item()
    print(f"epoch {epoch} rank {rank} train_loss {loss.item():.4f} val_loss {val:.4f}", flush=True)
    if val < best - 1e-3:
        best, bad = val, 0
    else:
        bad += 1
        if bad >= PATIENCE:
            print(f"epoch {epoch} rank {rank}: early stopping (no improvement for {bad} epoch)", flush=True)
            break
dist.barrier()
if rank == 0:
    torch.save(model.module.state_dict(), "tagger.pt")
    print("saved tagger.pt", flush=True)
dist.destroy_process_group()
