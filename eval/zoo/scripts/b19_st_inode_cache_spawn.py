"""Speech features: each rank converts its share of utterances to one small .pt feature file per utterance in the
local feature cache, then trains a frame classifier on them. Launched with torch.multiprocessing.spawn."""
import argparse
import datetime
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from tqdm import tqdm

CACHE = "feat_cache"


def worker(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                           timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(rank)
    n = 6000
    os.makedirs(f"{CACHE}/rank{rank}", exist_ok=True)
    for i in tqdm(range(n), desc=f"rank {rank} caching features", position=rank, mininterval=1.0):
        torch.save(torch.randn(20, 40), f"{CACHE}/rank{rank}/utt{i:06d}.pt")
    dist.barrier()
    files = sorted(os.listdir(f"{CACHE}/rank{rank}"))
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 48)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, f in enumerate(tqdm(files[:500], desc=f"rank {rank} train", position=rank)):
        x = torch.load(f"{CACHE}/rank{rank}/{f}")
        loss = nn.functional.cross_entropy(model(x), torch.randint(0, 48, (20,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--port", type=int, default=29500)
    a = ap.parse_args()
    mp.spawn(worker, args=(a.nprocs, a.port), nprocs=a.nprocs)
