"""Fraud scorer (tabular MLP with batch norm) on DDP, 2 nodes x 2 ranks, started by each node's run_node.sh; every
rank writes logs/<node>.rank<R>.log (the node's name from the node's profile)."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

RANK, NODE_NAME = int(os.environ["RANK"]), os.environ["NODE_NAME"]
SKEW = float(os.environ.get("ZOO_CLOCK_OFFSET_S", "0"))  # this node's clock error (NTP drift), set by the recorder


class NodeTime(logging.Formatter):
    def formatTime(self, record, datefmt=None):
        t = record.created + SKEW
        return time.strftime("%b %d %H:%M:%S", time.localtime(t)) + f".{int(t * 1e6) % 1000000:06d}"


os.makedirs("logs", exist_ok=True)
h = logging.FileHandler(f"logs/{NODE_NAME}.rank{RANK}.log")
h.setFormatter(NodeTime(f"%(asctime)s {NODE_NAME} train[%(process)d]: <%(levelname)s> %(message)s"))
log = logging.getLogger("fraud")
log.addHandler(h)
log.setLevel(logging.INFO)

STEPS = 600


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(40, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                              nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(RANK)
    log.info("rank %d/%d ready (local rank %s)", RANK, dist.get_world_size(), os.environ["LOCAL_RANK"])
    step = 0
    try:
        for step in range(1, STEPS + 1):
            x = torch.randn(256, 40, generator=g)
            y = (x[:, :3].sum(1) > 1.5).float()
            loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 25 == 0:
                log.info("step %d/%d loss %.5f", step, STEPS, loss.item())
    except Exception as e:
        log.critical("aborting at step %d: %r", step, e)
        raise
    log.info("finished %d steps", STEPS)


if __name__ == "__main__":
    main()
