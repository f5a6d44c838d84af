"""Audio-event tagger on 3 ranks (DDP, gloo) over precomputed log-mel features: each rank reads random batches straight
from its memory-mapped feature file (the page cache keeps it hot after the first pass). Every rank logs its own step
time split into data and compute every 20 steps."""
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    feats = np.load(f"features/mel-{rank}.npy", mmap_mode="r")
    labels = np.load(f"features/labels-{rank}.npy")
    n = len(feats)
    model = nn.Sequential(nn.Flatten(), nn.Linear(feats.shape[1] * feats.shape[2], 256), nn.ReLU(), nn.Linear(256, 20))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    rng = np.random.default_rng(rank)
    # warm the page cache: one pass over the file
    for i in range(0, n, 4096):
        np.asarray(feats[i:i + 4096]).sum()
    print(f"rank {rank}: {n} clips x {feats.shape[1:]} ({feats.nbytes >> 20} MiB mapped), cache warm", flush=True)
    acc = {"data": 0.0, "compute": 0.0}
    t_win = time.perf_counter()
    for step in range(1, 301):
        t0 = time.perf_counter()
        idx = np.sort(rng.choice(n, 64, replace=False))
        x = torch.from_numpy(np.stack([feats[i] for i in idx]))
        y = torch.from_numpy(labels[idx])
        t1 = time.perf_counter()
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t2 = time.perf_counter()
        acc["data"] += t1 - t0
        acc["compute"] += t2 - t1
        if step % 20 == 0:
            now = time.perf_counter()
            print(f"rank {rank} step {step}/300 loss {loss.item():.3f} step_time {1000 * (now - t_win) / 20:.1f}ms "
                  f"data {1000 * acc['data'] / 20:.1f}ms compute {1000 * acc['compute'] / 20:.1f}ms", flush=True)
            acc = dict.fromkeys(acc, 0.0)
            t_win = now
    dist.barrier()
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
