"""Data-parallel MLP started by the job script with plain multiprocessing and env:// (MASTER_ADDR/MASTER_PORT)."""
import datetime
import multiprocessing as mp
import os

import torch
import torch.distributed as dist
import torch.nn as nn

WORLD = int(os.environ.get("NUM_WORKERS", "2"))


def worker(rank):
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=20))
    model = nn.Linear(16, 1)
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(300):
        x = torch.randn(32, 16)
        loss = (model(x).squeeze() - x.sum(1)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= WORLD
        opt.step()
        if rank == 0 and step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    print(f"MASTER_ADDR={os.environ.get('MASTER_ADDR')} MASTER_PORT={os.environ.get('MASTER_PORT')} workers={WORLD}")
    procs = [mp.Process(target=worker, args=(r,)) for r in range(WORLD)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    codes = [p.exitcode for p in procs]
    print("exit codes:", codes)
    raise SystemExit(max(abs(c) for c in codes))
