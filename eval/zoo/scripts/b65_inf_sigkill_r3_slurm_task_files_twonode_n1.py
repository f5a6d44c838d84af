"""Semantic segmentation head (small conv net on 64x64 tiles) on DDP, 4 tasks over two nodes, started by the batch
script one task per rank (srun -o slurm-%j_%t.out style: every task's stdout and stderr in its own file)."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

task = int(os.environ["SLURM_PROCID"])
node = os.environ["SLURMD_NODENAME"]
# this node's clock error (NTP drift), set per node by the recorder: the log's timestamps carry it, as they would
SKEW = float(os.environ.get("ZOO_CLOCK_OFFSET_S", "0"))


class NodeClockFormatter(logging.Formatter):
    def formatTime(self, record, datefmt=None):
        t = record.created + SKEW
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


h = logging.StreamHandler()
h.setFormatter(NodeClockFormatter(f"[%(asctime)s] {node} task {task}: %(message)s"))
log = logging.getLogger("seg")
log.addHandler(h)
log.setLevel(logging.INFO)

STEPS = 300


def main():
    dist.init_process_group("gloo", rank=task, world_size=int(os.environ["SLURM_NTASKS"]),
                            timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                        nn.Conv2d(16, 5, 1))
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(task)
    log.info("rank %d/%d up, local id %s", dist.get_rank(), dist.get_world_size(), os.environ["SLURM_LOCALID"])
    step = 0
    try:
        for step in range(1, STEPS + 1):
            x = torch.randn(8, 3, 64, 64, generator=g)
            y = (x[:, 0] > 0.5).long() + (x[:, 1] > 0.5).long() * 2
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                log.info("step %d loss=%.4f", step, loss.item())
    except Exception as e:
        log.error("step %d: %s: %s", step, type(e).__name__, e)
        raise
    log.info("finished")


if __name__ == "__main__":
    main()
