"""Speech-command classifier on log-mel frames, DDP over gloo, one process per node, two nodes (static rendezvous)."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s %(levelname)s [node%(node)s rank%(rank)s] %(message)s", level=logging.INFO)
RANK = int(os.environ["RANK"])
log = logging.LoggerAdapter(logging.getLogger("train_kws"), {"node": os.environ.get("GROUP_RANK", "?"), "rank": RANK})


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    world = dist.get_world_size()
    log.info("process group ready (world %d, master %s:%s)", world, os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"])
    torch.manual_seed(RANK)
    x = torch.randn(4096, 40 * 16)
    y = torch.randint(0, 12, (4096,))
    model = DDP(nn.Sequential(nn.Linear(640, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 12)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t0 = time.time()
    steps = 3000
    for step in range(1, steps + 1):
        i = torch.randint(0, 4096, (64,))
        loss = nn.functional.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d/%d loss %.4f %.1f ms/step", step, steps, loss.item(), (time.time() - t0) * 1000 / step)
    dist.barrier()
    log.info("training done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
