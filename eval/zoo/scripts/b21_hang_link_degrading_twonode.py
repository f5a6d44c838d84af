"""Language-ID classifier (hashed char n-grams -> MLP), DDP over gloo, two nodes x 1 process; python logging with
timestamps, a step-time line every 10 steps."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
logging.basicConfig(format="%(asctime)s %(levelname)s rank%(rank)s: %(message)s", level=logging.INFO)
log = logging.LoggerAdapter(logging.getLogger("langid"), {"rank": RANK})


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    log.info("process group ready, world size %d", dist.get_world_size())
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(2 ** 15, 32), nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 96)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    t = time.perf_counter()
    for step in range(1, 2001):
        grams = torch.randint(0, 2 ** 15, (128, 60), generator=g)
        loss = nn.functional.cross_entropy(model(grams), grams[:, 0] % 96)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("step %d/2000 loss %.4f step_ms %.1f", step, loss.item(), (time.perf_counter() - t) * 100)
            t = time.perf_counter()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
