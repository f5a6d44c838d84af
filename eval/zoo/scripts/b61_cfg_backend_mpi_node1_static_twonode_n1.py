"""Patch classifier (a tiny ViT) trained with DDP on two nodes; the collective backend comes from DIST_BACKEND in the
node's environment (the site's module files set it per partition), gloo when unset."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class TinyViT(nn.Module):
    def __init__(self, d=64, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, stride=4)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 128, batch_first=True), 2)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        return self.head(self.enc(t).mean(1))


def main():
    backend = os.environ.get("DIST_BACKEND", "gloo")
    rank = int(os.environ["RANK"])
    print(f"[rank {rank}] init_process_group backend={backend}", flush=True)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    model = DDP(TinyViT())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 101):
        x = torch.randn(16, 3, 32, 32, generator=g)
        y = torch.randint(0, 10, (16,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
