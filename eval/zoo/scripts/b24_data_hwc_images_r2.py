"""Satellite-tile land-cover classifier (small CNN), DDP over gloo; each rank trains on its own region's tile export
(an .npy array of 32x32 RGB tiles and a labels file); python logging with asctime."""
import logging
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)s [rank %(rank)s] %(message)s", level=logging.INFO)
log = logging.LoggerAdapter(logging.getLogger("landcover"), {"rank": os.environ.get("RANK", "?")})


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    x = torch.from_numpy(np.load(f"tiles/region-{rank}.npy")).float() / 255.0
    y = torch.from_numpy(np.load(f"tiles/region-{rank}.labels.npy"))
    log.info("loaded %d tiles from tiles/region-%d.npy", len(x), rank)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(2):
        perm = torch.randperm(len(x), generator=g)
        for step in range(len(x) // 64):
            idx = perm[step * 64:(step + 1) * 64]
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
