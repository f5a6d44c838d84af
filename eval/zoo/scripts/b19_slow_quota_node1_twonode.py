"""Keyword-spotting CNN on MFCC frames, DDP over gloo, one process per node, two nodes (static rendezvous); each node
logs its throughput every 100 steps."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s | %(levelname)s | node%(node)s/rank%(rank)s | %(message)s", level=logging.INFO)
RANK = int(os.environ["RANK"])
log = logging.LoggerAdapter(logging.getLogger("kws"), {"node": os.environ.get("GROUP_RANK", "?"), "rank": RANK})


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(RANK)
    model = DDP(nn.Sequential(nn.Conv1d(13, 64, 5, padding=2), nn.ReLU(), nn.Conv1d(64, 64, 5, padding=2), nn.ReLU(),
                              nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    total, bs = 2400, 32
    t_last = time.time()
    for step in range(1, total + 1):
        x = torch.randn(bs, 13, 98)
        y = torch.randint(0, 12, (bs,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            dt = time.time() - t_last
            t_last = time.time()
            log.info("step %d/%d loss %.3f %.1f samples/s %.2f ms/step", step, total, loss.item(), 100 * bs / dt,
                     dt * 10)
    dist.barrier()
    log.info("finished %d steps", total)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
