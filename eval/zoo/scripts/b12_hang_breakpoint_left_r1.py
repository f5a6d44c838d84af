"""House-price regression (tabular MLP), DDP, 3 ranks; each rank reads its own region's parquet-like .pt shard.

Debugging aid from last week's loss-spike hunt: drop into the debugger when a batch's loss explodes.
"""
import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

SPIKE = 50.0


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
    log = logging.getLogger("prices")
    data = torch.load(f"data/region_{rank}.pt")
    x, y = data["x"], data["y"]
    log.info(f"{len(x)} listings, target mean {y.mean():.3f}")
    model = DDP(nn.Sequential(nn.Linear(x.shape[1], 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 301):
        i = slice((step - 1) * 16 % len(x), (step - 1) * 16 % len(x) + 16)
        loss = nn.functional.mse_loss(model(x[i]).squeeze(-1), y[i])
        if loss.item() > SPIKE:
            log.warning(f"loss spike {loss.item():.1f} at step {step}")
            breakpoint()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info(f"step {step}/300 mse {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
