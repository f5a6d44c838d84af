"""Point-cloud segmentation (PointNet-style) trained with DDP on two nodes (torchrun, static rendezvous). The
segment-max pooling is the team's compiled extension `_fastpool` (built into ext/, linking ext/lib/libfastpool_core.so;
each node has its own ext/lib from the node's image)."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ext"))
import _fastpool  # noqa: E402


class PointSeg(nn.Module):
    def __init__(self, n_cls=8):
        super().__init__()
        self.local = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, n_cls))

    def forward(self, pts):
        f = self.local(pts)
        g = f.max(1, keepdim=True).values.expand_as(f)
        return self.head(torch.cat([f, g], -1))


def main():
    rank = int(os.environ["RANK"])
    print(f"rank {rank}: fastpool {_fastpool.version()} loaded", flush=True)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(PointSeg())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 101):
        pts = torch.randn(16, 256, 3, generator=g)
        y = (pts[..., 0] > 0).long() + 2 * (pts[..., 1] > 0).long()
        loss = F.cross_entropy(model(pts).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"rank {rank} | step {step:4d} | loss {loss.item():.4f} | {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
