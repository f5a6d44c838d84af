import datetime
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def run(rank, world_size):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", os.environ.get("ZOO_PORT", "29500"))
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=20))
    model = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))
    for p in model.parameters():  # same start on every worker
        dist.broadcast(p.data, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for it in range(1500):
        x = torch.randn(32, 128)
        y = x[:, :1] * 2
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():  # average gradients by hand
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            p.grad /= world_size
        opt.step()
        if it % 100 == 0 and rank == 0:
            print(f"iter {it:5d} | mse {loss.item():.5f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2)
