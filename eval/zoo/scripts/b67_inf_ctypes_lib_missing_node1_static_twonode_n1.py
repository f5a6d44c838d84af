"""Recommendation model (hashed sparse features + MLP) trained with DDP on two nodes (torchrun, static rendezvous).
Feature hashing is done by the platform team's native library libhashemb.so (installed with the node image under
opt_hashemb/lib, found through LD_LIBRARY_PATH)."""
import ctypes
import datetime
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

BUCKETS = 50000


def load_hasher():
    lib = ctypes.CDLL("libhashemb.so")
    lib.hash_features.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_long, ctypes.c_long,
                                  ctypes.POINTER(ctypes.c_int64)]

    def hash_batch(ids):
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        out = np.empty_like(ids)
        lib.hash_features(ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), ids.size, BUCKETS,
                          out.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)))
        return torch.from_numpy(out)
    return hash_batch


def main():
    rank = int(os.environ["RANK"])
    print(f"rank {rank}: loading feature hasher (LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH')})", flush=True)
    hash_batch = load_hasher()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(BUCKETS, 32, mode="sum"), nn.Linear(32, 64), nn.ReLU(),
                              nn.Linear(64, 1)))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    rng = np.random.default_rng(rank)
    t0 = time.time()
    for step in range(1, 151):
        raw = rng.integers(0, 2**40, (128, 26))
        x = hash_batch(raw)
        y = torch.from_numpy((raw[:, 0] % 7 == 0).astype(np.float32))
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"rank {rank} step {step} logloss {loss.item():.4f} {(time.time() - t0) / step * 1000:.0f}ms/step",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
