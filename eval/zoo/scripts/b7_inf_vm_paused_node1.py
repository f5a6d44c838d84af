"""Speech-commands style 1-D CNN, one process per node, logging with timestamps."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO,
                    format=f"%(asctime)s [node{os.environ.get('GROUP_RANK', '?')}] %(levelname)s %(message)s")
log = logging.getLogger(__name__)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Conv1d(1, 32, 9, stride=4), nn.ReLU(), nn.Conv1d(32, 32, 9, stride=4), nn.ReLU(),
                              nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 12)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    log.info("rank %d ready", rank)
    t0 = time.time()
    for step in range(1, 2001):
        x = torch.randn(16, 1, 4000, generator=g)
        y = torch.randint(0, 12, (16,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d loss %.4f %.1f ms/step", step, loss.item(), (time.time() - t0) * 40)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
