"""Tabular classifier with torch.multiprocessing.spawn (gloo); full validation pass after every epoch."""
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD = 2
EPOCHS = 5
STEPS = 150


def setup_logging(rank):
    logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s", level=logging.INFO)
    return logging.getLogger("train")


def evaluate(model, rank):
    g = torch.Generator().manual_seed(100 + rank)
    correct = torch.zeros(2)
    model.eval()
    with torch.no_grad():
        for _ in range(2000):  # the full validation set: 13x the epoch's training samples
            x = torch.randn(128, 40, generator=g)
            y = (x[:, :3].sum(1) > 0).long()
            correct += torch.tensor([(model(x).argmax(1) == y).sum().item(), 128.0])
    model.train()
    dist.all_reduce(correct)
    return (correct[0] / correct[1]).item()


def run(rank):
    torch.set_num_threads(1)
    log = setup_logging(rank)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['ZOO_PORT']}", rank=rank,
                            world_size=WORLD)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(40, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(1, EPOCHS + 1):
        t = time.time()
        for step in range(1, STEPS + 1):
            x = torch.randn(128, 40, generator=g)
            y = (x[:, :3].sum(1) > 0).long()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0 and rank == 0:
                log.info(f"epoch {epoch} step {step}/{STEPS} loss {loss.item():.4f} "
                         f"{(time.time() - t) / 10 * 1000:.1f} ms/step")
                t = time.time()
        t_eval = time.time()
        acc = evaluate(model, rank)
        if rank == 0:
            log.info(f"epoch {epoch} validation accuracy {acc:.4f} ({time.time() - t_eval:.1f}s)")
        t = time.time()
    dist.barrier()
    if rank == 0:
        log.info("Done! Final validation accuracy %.4f", acc)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, nprocs=WORLD)
