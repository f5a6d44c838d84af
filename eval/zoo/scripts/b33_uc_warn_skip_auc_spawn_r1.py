"""Churn classifier (MLP on tabular features), DDP over gloo, 2 processes started with torch.multiprocessing.spawn.
Every 150 steps each process scores its part of the validation set; the AUCs are averaged with an all_reduce. A
failed evaluation must not kill a long run, so it is logged and training goes on."""
import logging
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("churn")


def auc(scores, labels):
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = (pos[:, None] > neg[None, :]).float().sum() + 0.5 * (pos[:, None] == neg[None, :]).float().sum()
    return wins.item() / (len(pos) * len(neg))


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        s = model(x).squeeze(-1)
    model.train()
    return auc(s, y)


def worker(rank, world, port):
    logging.basicConfig(format="%(asctime)s %(processName)s %(levelname)s %(message)s", level=logging.INFO,
                        stream=sys.stdout)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    d = np.load(f"data/train-{rank}.npz")
    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
    v = np.load(f"data/valid-{rank}.npz")
    vx, vy = torch.from_numpy(v["x"]), torch.from_numpy(v["y"])
    log.info("rank %d: %d train rows, %d validation rows", rank, len(y), len(vy))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 601):
        i = torch.randint(0, len(y), (128,), generator=g)
        loss = F.binary_cross_entropy_with_logits(model(x[i]).squeeze(-1), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.4f (%.1f ms/step)", step, loss.item(), (time.time() - t0) / step * 1000)
        if step % 150 == 0:
            try:
                m = torch.tensor([evaluate(model, vx, vy), 1.0])
            except Exception as e:
                log.warning("validation at step %d failed: %r", step, e)
                continue
            dist.all_reduce(m)
            if rank == 0:
                log.info("step %d valid auc %.4f", step, (m[0] / m[1]).item())
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 29500
    mp.spawn(worker, args=(2, port), nprocs=2)
