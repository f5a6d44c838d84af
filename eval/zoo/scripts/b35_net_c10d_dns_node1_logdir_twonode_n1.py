"""Sequential recommender (GRU4Rec-style), DDP over gloo, two nodes, one process each; plain prints."""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class GRU4Rec(nn.Module):
    def __init__(self, items=20000, d=96):
        super().__init__()
        self.emb = nn.Embedding(items, d)
        self.gru = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, items)

    def forward(self, seq):
        h, _ = self.gru(self.emb(seq))
        return self.out(h[:, -1])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[rank{rank}] joined on {os.uname().nodename}, world {world}")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(GRU4Rec())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 401):
        seq = torch.randint(0, 20000, (64, 12), generator=g)
        loss = F.cross_entropy(model(seq[:, :-1]), seq[:, -1])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
