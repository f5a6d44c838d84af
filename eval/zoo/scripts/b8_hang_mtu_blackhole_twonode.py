"""Small ResNet-ish MLP, one process per node over the data network; rank 0 logs every 10 steps."""
import datetime
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 401):
        x = torch.randn(64, 512, generator=g)
        y = torch.randint(0, 10, (64,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("[rank %d] step %d/400 loss %.4f %.1f ms/step", rank, step, loss.item(),
                     (time.time() - t0) * 100)
            t0 = time.time()
    dist.barrier()
    log.info("[rank %d] done", rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
