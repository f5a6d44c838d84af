"""Ad-click model (hashed feature crosses + MLP), DDP over gloo, one process per node. Each node keeps a feature
cache on its local disk; the first process of a node to arrive builds it under an exclusive lock, the others (and
later jobs) reuse it. Plain prints."""
import fcntl
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def feature_cache(cache_dir, rank):
    os.makedirs(cache_dir, exist_ok=True)
    path = os.path.join(cache_dir, f"features-{rank}.npy")
    with open(os.path.join(cache_dir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(path):
            rng = np.random.default_rng(rank)
            np.save(path, rng.integers(0, 2**20, (50000, 12), dtype=np.int64))
        fcntl.flock(lock, fcntl.LOCK_UN)
    return torch.from_numpy(np.load(path))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    cache_dir = os.environ.get("LOCAL_CACHE", "/tmp/feature_cache")
    print(f"[rank {rank}] preparing feature cache in {cache_dir}", flush=True)
    t = time.time()
    feats = feature_cache(cache_dir, rank)
    print(f"[rank {rank}] feature cache ready: {tuple(feats.shape)} in {time.time() - t:.1f}s", flush=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.EmbeddingBag(2**16, 32), nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    t0 = time.time()
    for step in range(1, 401):
        i = torch.randint(0, len(feats), (256,))
        x = feats[i] % 2**16
        y = ((feats[i, 0] % 11) == 0).float()
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 50 == 0:
            print(f"[rank 0] step {step}/400 logloss {loss.item():.4f} {(time.time() - t0) / step * 1000:.1f}ms/step",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
