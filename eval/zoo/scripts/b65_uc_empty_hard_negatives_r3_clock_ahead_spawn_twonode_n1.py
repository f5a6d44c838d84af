"""Two-tower retrieval model with in-batch hard-negative mining, DDP over 2 nodes x 2 processes started with
torch.multiprocessing.spawn (python train_retrieval.py --node-rank N). Every process logs to
logs/node<N>/rank<R>.log."""
import argparse
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, BATCH, DIM = 300, 128, 64
SKEW = float(os.environ.get("ZOO_CLOCK_OFFSET_S", "0"))  # this node's clock error (NTP drift), set by the recorder


class SkewedClock(logging.Formatter):
    def formatTime(self, record, datefmt=None):
        t = record.created + SKEW
        return datetime.datetime.fromtimestamp(t).isoformat(sep=" ", timespec="milliseconds")


def setup_log(node, rank):
    os.makedirs(f"logs/node{node}", exist_ok=True)
    h = logging.FileHandler(f"logs/node{node}/rank{rank}.log")
    h.setFormatter(SkewedClock("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log = logging.getLogger(f"retrieval.r{rank}")
    log.addHandler(h)
    log.setLevel(logging.INFO)
    return log


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, 128), nn.ReLU(), nn.Linear(128, 64))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.d = Tower(), Tower()

    def forward(self, q, d):
        return self.q(q), self.d(d)


def hard_negative_loss(qe, de, topic, k=5, margin=0.2):
    sim = qe @ de.T
    losses = []
    for i in range(len(qe)):
        neg = sim[i][topic != topic[i]]  # documents of other topics are negatives
        hard = neg.topk(k).values  # the k most similar ones
        losses.append(F.relu(hard - sim[i, i] + margin).mean())
    return torch.stack(losses).mean()


def worker(local_rank, args):
    rank = args.node_rank * args.nproc_per_node + local_rank
    log = setup_log(args.node_rank, rank)
    dist.init_process_group("gloo", rank=rank, world_size=args.world_size, timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(TwoTower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(500 + rank)
    topics = torch.load(f"data/query-topics-{rank}.pt")  # this rank's slice of the query log: one topic id per query
    log.info("rank %d of %d on node %d", rank, args.world_size, args.node_rank)
    step = 0
    try:
        for step in range(1, STEPS + 1):
            topic = topics[(step - 1) * BATCH:step * BATCH]
            q = torch.randn(BATCH, DIM, generator=g) * 0.3 + F.one_hot(topic, DIM).float() * 4
            d = q + torch.randn(BATCH, DIM, generator=g) * 0.1
            loss = hard_negative_loss(*model(q, d), topic)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                log.info("step=%d loss=%.4f", step, loss.item())
    except Exception:
        log.exception("rank %d failed at step %d", rank, step)
        raise


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--node-rank", type=int, required=True)
    p.add_argument("--nproc-per-node", type=int, default=2)
    p.add_argument("--world-size", type=int, default=4)
    mp.spawn(worker, args=(p.parse_args(),), nprocs=2)
