"""Audio-event MLP on three ranks sharing the node; rank 0 logs every 20 steps."""
import datetime
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)s | %(message)s")
log = logging.getLogger(__name__)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    torch.set_num_threads(1)
    model = DDP(nn.Sequential(nn.Linear(640, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 50)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    steps = 420
    for step in range(1, steps + 1):
        x = torch.randn(128, 640, generator=g)
        y = torch.randint(0, 50, (128,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 20 == 0:
            log.info("step %d/%d loss %.4f avg step %.1f ms", step, steps, loss.item(), (time.time() - t0) * 50)
            t0 = time.time()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
