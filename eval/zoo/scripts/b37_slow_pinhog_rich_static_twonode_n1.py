"""Tabular fraud classifier (MLP with batch-norm over 120 engineered features), DDP over gloo, one process per
node; rich's RichHandler prints each node's step time every 25 steps."""
import logging
import os
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from rich.logging import RichHandler
from torch.nn.parallel import DistributedDataParallel as DDP

NODE = os.environ.get("GROUP_RANK", "0")
logging.basicConfig(level=logging.INFO, format=f"node{NODE} %(message)s", datefmt="[%X]",
                    handlers=[RichHandler(show_path=False)])
log = logging.getLogger("fraud")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info(f"rank {rank}/{world} on {socket.gethostname()}")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(120, 512), nn.BatchNorm1d(512), nn.ReLU(), nn.Linear(512, 512),
                              nn.BatchNorm1d(512), nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    steps, t0 = 600, time.time()
    for step in range(1, steps + 1):
        x = torch.randn(256, 120, generator=g)
        y = (x[:, :5].sum(1) > 2.5).float()
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info(f"step {step}/{steps} loss {loss.item():.4f} {(time.time() - t0) / 25 * 1000:.1f} ms/step")
            t0 = time.time()
    log.info("training complete")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
