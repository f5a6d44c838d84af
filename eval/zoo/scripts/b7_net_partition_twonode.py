"""Transformer encoder on synthetic token streams, DDP over gloo across two nodes (2 processes each)."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Encoder(nn.Module):
    def __init__(self, vocab=2000, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, 128, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        return self.head(self.enc(self.emb(x)))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world} on {os.uname().nodename} local_rank {os.environ['LOCAL_RANK']}", flush=True)
    model = DDP(Encoder())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 601):
        x = torch.randint(0, 2000, (8, 32), generator=g)
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), x.roll(1, 1).flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.3f} {(time.time() - t0) * 100:.0f}ms/step", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
