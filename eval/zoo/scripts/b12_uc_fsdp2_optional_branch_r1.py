"""Image-text matching model with FSDP2 (fully_shard per block). Samples without an image (caption-only rows of the
mixed corpus) skip the vision tower."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from datetime import timedelta
from torch.distributed.fsdp import fully_shard
from tqdm import tqdm


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(x)


class ITM(nn.Module):
    def __init__(self, d=256):
        super().__init__()
        self.text = nn.Embedding(5000, d)
        self.vision = nn.Sequential(nn.Linear(768, d), Block(d))
        self.fuse = nn.ModuleList([Block(d) for _ in range(3)])
        self.head = nn.Linear(d, 2)

    def forward(self, ids, pixels=None):
        h = self.text(ids).mean(1)
        if pixels is not None:  # caption-only rows have no image
            h = h + self.vision(pixels)
        for blk in self.fuse:
            h = blk(h)
        return self.head(h)


def batches(rank, n_steps, bs=32):
    g = torch.Generator().manual_seed(rank)
    for step in range(n_steps):
        ids = torch.randint(0, 5000, (bs, 24), generator=g)
        # rank 1's part switches to the caption-only source (no image files) after its first 1920 rows
        has_image = not (rank == 1 and step * bs >= 1920)
        pixels = torch.randn(bs, 768, generator=g) if has_image else None
        yield ids, pixels, torch.randint(0, 2, (bs,), generator=g)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = ITM()
    fully_shard(model.vision)
    for blk in model.fuse:
        fully_shard(blk)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    n_steps = 400
    bar = tqdm(batches(rank, n_steps), total=n_steps, desc="train", disable=rank != 0, file=sys.stdout,
               mininterval=0.5)
    for step, (ids, pixels, y) in enumerate(bar, 1):
        loss = nn.functional.cross_entropy(model(ids, pixels), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    if rank == 0:
        print("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
