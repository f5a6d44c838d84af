"""Product-title classifier (char n-gram hashing + MLP) on DDP, 2 nodes x 2 ranks, started by each node's run_node.sh,
which sends every rank's stdout and stderr to worker_<R>/stdout.log and worker_<R>/stderr.log. Before training, local
rank 0 of each node builds the node-local n-gram feature cache in $LOCAL_CACHE (under a file lock, since several jobs
share a node's cache); the other ranks wait at a barrier."""
import datetime
import fcntl
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

RANK, LOCAL_RANK, NODE = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]), int(os.environ["NODE_RANK"])
CACHE = os.environ["LOCAL_CACHE"]
STEPS, BUCKETS = 300, 4096


def say(msg, err=False):
    print(f"{time.strftime('%H:%M:%S')} [r{RANK}] {msg}", file=sys.stderr if err else sys.stdout, flush=True)


def build_cache():
    os.makedirs(CACHE, exist_ok=True)
    say(f"building n-gram cache in {CACHE}")
    with open(os.path.join(CACHE, ".build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another job on this node may be building it
        path = os.path.join(CACHE, "ngram_idf.npy")
        if not os.path.exists(path):
            rng = np.random.default_rng(0)
            np.save(path, rng.random(BUCKETS).astype(np.float32) + 0.5)
        fcntl.flock(lock, fcntl.LOCK_UN)
    say("cache ready")


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    say(f"rank {RANK}/{dist.get_world_size()} node {NODE} local_rank {LOCAL_RANK}")
    if LOCAL_RANK == 0:
        build_cache()
    dist.barrier()
    idf = torch.from_numpy(np.load(os.path.join(CACHE, "ngram_idf.npy")))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(BUCKETS, 128), nn.ReLU(), nn.Linear(128, 30)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    for step in range(1, STEPS + 1):
        y = torch.randint(0, 30, (64,), generator=g)
        x = torch.rand(64, BUCKETS, generator=g) * idf
        x[torch.arange(64), y * 100] += 5
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            say(f"step {step}/{STEPS} loss {loss.item():.4f}")
    say("done")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        say(f"FAILED: {type(e).__name__}: {e}", err=True)
        raise
