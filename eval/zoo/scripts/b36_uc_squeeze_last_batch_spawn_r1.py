"""Tabular regression (house prices, per-rank parquet-like shards saved as .pt) with torch.multiprocessing.spawn;
validation after every epoch gathers each rank's predictions and computes RMSE on rank 0. asctime logging."""
import logging
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def setup_logging(rank):
    logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s", level=logging.INFO, force=True)
    return logging.getLogger("train")


def evaluate(model, x, y, bs=64):
    model.eval()
    preds = []
    with torch.no_grad():
        for i in range(0, len(x), bs):
            preds.append(model(x[i:i + bs]).squeeze())
    model.train()
    preds = torch.cat(preds)
    return F.mse_loss(preds, y, reduction="sum"), len(y)


def worker(rank, world, port):
    log = setup_logging(rank)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    tr = torch.load(f"data/train-{rank}.pt")
    va = torch.load(f"data/valid-{rank}.pt")
    log.info(f"train rows {len(tr['y'])}, valid rows {len(va['y'])}")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64),
                                                              nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    bs = 128
    for epoch in range(1, 4):
        perm = torch.randperm(len(tr["y"]), generator=torch.Generator().manual_seed(epoch))
        for step, i in enumerate(range(0, len(perm) - bs + 1, bs), 1):
            idx = perm[i:i + bs]
            loss = F.mse_loss(model(tr["x"][idx]).squeeze(1), tr["y"][idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                log.info(f"epoch {epoch} step {step} train_mse {loss.item():.4f}")
        sse, n = evaluate(model, va["x"], va["y"])
        tot = torch.tensor([sse.item(), float(n)])
        dist.all_reduce(tot)
        if rank == 0:
            log.info(f"epoch {epoch} valid_rmse {(tot[0] / tot[1]).sqrt().item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1])), nprocs=2)
