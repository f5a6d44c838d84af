"""Text-to-speech duration predictor (embedding + 1-D conv stack), two nodes started by hand, each with
`python train_duration.py --node-rank K`, which torch.multiprocessing.spawn's one process per node and joins a tcp://
rendezvous on the head node; python logging with asctime, the node and the rank; a timing line every 20 steps."""
import argparse
import logging
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class DurationPredictor(nn.Module):
    def __init__(self, phones=120, d=256):
        super().__init__()
        self.emb = nn.Embedding(phones, d)
        self.convs = nn.Sequential(nn.Conv1d(d, d, 5, padding=2), nn.ReLU(), nn.Conv1d(d, d, 5, padding=2), nn.ReLU(),
                                   nn.Conv1d(d, d, 5, padding=2), nn.ReLU())
        self.out = nn.Linear(d, 1)

    def forward(self, ph):
        return self.out(self.convs(self.emb(ph).transpose(1, 2)).transpose(1, 2)).squeeze(-1)


def worker(local_rank, args):
    rank = args.node_rank * args.nproc + local_rank
    world = args.nnodes * args.nproc
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s node{args.node_rank} rank{rank} %(levelname)s %(message)s")
    log = logging.getLogger("dur")
    dist.init_process_group("gloo", init_method=f"tcp://{args.master}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(DurationPredictor())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t_last = time.time()
    for step in range(1, args.steps + 1):
        ph = torch.randint(0, 120, (16, 40), generator=g)
        dur = (ph % 7).float() + torch.rand(16, 40, generator=g)
        loss = F.mse_loss(model(ph), dur)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            now = time.time()
            log.info("step %d/%d loss %.4f %.1f ms/step", step, args.steps, loss.item(), 1000 * (now - t_last) / 20)
            t_last = now
    dist.barrier()
    log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--node-rank", type=int, required=True)
    ap.add_argument("--nnodes", type=int, default=2)
    ap.add_argument("--nproc", type=int, default=1)
    ap.add_argument("--master", required=True)
    ap.add_argument("--steps", type=int, default=400)
    mp.spawn(worker, args=(ap.parse_args(),), nprocs=ap.parse_args().nproc)
