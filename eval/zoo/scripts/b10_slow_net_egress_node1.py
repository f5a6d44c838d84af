"""Two-node DDP (one process per node): a small MLP-mixer-ish classifier on synthetic patches."""
import datetime
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(message)s")
log = logging.getLogger(__name__)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(16 * 48, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(),
                              nn.Linear(256, 10)))
    if rank == 0:
        log.info("model params: %d", sum(p.numel() for p in model.parameters()))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    steps = 800
    for step in range(1, steps + 1):
        x = torch.randn(64, 16, 48, generator=g)
        y = torch.randint(0, 10, (64,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 and rank == 0:
            log.info("step %d/%d | loss %.4f | %.1f ms/step", step, steps, loss.item(), (time.time() - t) * 100)
            t = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
