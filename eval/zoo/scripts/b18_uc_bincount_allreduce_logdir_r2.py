"""Land-cover tile classifier (small CNN on 8x8 multispectral tiles), DDP over gloo, 3 ranks.
Each rank trains on the tiles of one region; at the end of every epoch the label histogram of the tiles seen is
summed over ranks for the class-balance report."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CLASSES = 10  # ..., 8 wetland, 9 snow/ice
REGIONS = ["alps", "scandinavia", "iberia"]


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(4, 16, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 64, CLASSES)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)
    region = REGIONS[rank % len(REGIONS)]
    present = CLASSES if region != "iberia" else CLASSES - 1  # no snow/ice tiles in the iberia region
    print(f"rank {rank}/{world} region {region}")
    for epoch in range(5):
        t0, seen = time.time(), []
        for step in range(80):
            x = torch.randn(32, 4, 8, 8, generator=g)
            y = torch.randint(0, present, (32,), generator=g)
            x[torch.arange(32), y % 4] += 1.0
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen.append(y)
            if step % 20 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}")
        hist = torch.bincount(torch.cat(seen))
        dist.all_reduce(hist)
        if rank == 0:
            print(f"epoch {epoch} done in {time.time() - t0:.1f}s, labels seen: {hist.tolist()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
