"""Text-to-SQL reranker (small MLP over pair features), DDP over gloo started with torch.multiprocessing.spawn on one
machine. The process group is initialised from the environment (env://): MASTER_ADDR/MASTER_PORT default to this host,
WORLD_SIZE to the number of processes started.
usage: python train_rerank.py [--nprocs N] [--port P]"""
import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def worker(rank, nprocs, port):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    os.environ.setdefault("WORLD_SIZE", str(nprocs))
    os.environ["RANK"] = str(rank)
    print(f"[{time.strftime('%H:%M:%S')}] worker {rank}: joining process group "
          f"({os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}, world size {os.environ['WORLD_SIZE']})",
          flush=True)
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(96, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 1001):
        x = torch.randn(128, 96, generator=g)
        y = torch.randint(0, 2, (128,), generator=g).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(f"[{time.strftime('%H:%M:%S')}] worker {rank}: step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--port", type=int, default=29500)
    args = ap.parse_args(sys.argv[1:])
    mp.spawn(worker, args=(args.nprocs, args.port), nprocs=args.nprocs)
