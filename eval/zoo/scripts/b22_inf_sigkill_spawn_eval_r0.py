"""Fraud-detection MLP on transaction features, DDP over gloo, started with torch.multiprocessing.spawn; a
validation pass with an all-reduced AUC proxy after every epoch; logging with asctime."""
import argparse
import datetime
import logging

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def run(rank, world, port):
    logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s", level=logging.INFO)
    log = logging.getLogger("fraud")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    xv, yv = torch.randn(300000, 64, generator=g), (torch.rand(300000, generator=g) < 0.05).float()
    for epoch in range(6):
        model.train()
        for step in range(1, 151):
            x = torch.randn(128, 64, generator=g)
            y = (x[:, 0] + 0.5 * x[:, 1] > 1.6).float()
            loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 50 == 0:
                log.info("epoch %d step %d/150 loss %.4f", epoch, step, loss.item())
        log.info("epoch %d: evaluating on %d held-out transactions", epoch, len(yv))
        model.eval()
        hits = torch.zeros(2)
        with torch.no_grad():
            for i in range(0, len(yv), 500):
                s = model.module(xv[i:i + 500]).squeeze(1)
                hits += torch.tensor([((s > 0).float() == yv[i:i + 500]).sum().item(), len(s)])
        dist.all_reduce(hits)
        log.info("epoch %d val_acc %.4f", epoch, (hits[0] / hits[1]).item())
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=29500)
    a = ap.parse_args()
    mp.spawn(run, args=(2, a.port), nprocs=2)
