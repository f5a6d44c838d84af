"""Ray Train: query-intent classifier (hashed bag of words + MLP), 2 workers, DDP over gloo. Each worker tokenizes its
shard once into a node-local cache, under a file lock so that concurrent jobs on the node do not write the same
cache file twice."""
import os
import time

import numpy as np
import ray
import torch
import torch.nn as nn
from filelock import FileLock
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

CACHE = os.path.abspath("cache/queries")
DATA = os.path.abspath("data/queries")


def tokenized_shard(rank):
    path = f"{CACHE}/shard-{rank:02d}.tok.npy"
    with FileLock(path + ".lock"):
        if not os.path.exists(path):
            print(f"[worker {rank}] tokenizing data/queries/shard-{rank:02d}.txt", flush=True)
            t0 = time.time()
            with open(f"{DATA}/shard-{rank:02d}.txt") as f:
                rows = [[hash(w) % 50000 for w in line.split()[:16]] + [0] * (16 - len(line.split()[:16]))
                        for line in f]
            np.save(path, np.array(rows, dtype=np.int64))
            print(f"[worker {rank}] cached {len(rows)} queries in {time.time() - t0:.1f}s", flush=True)
    return np.load(path)


def train_func(config):
    rank = train.get_context().get_world_rank()
    ids = torch.from_numpy(tokenized_shard(rank))
    labels = ids[:, 0] % 12
    model = prepare_model(nn.Sequential(nn.EmbeddingBag(50000, 96), nn.Linear(96, 96), nn.ReLU(), nn.Linear(96, 12)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for step in range(1, len(ids) // 64 + 1):
            sl = slice((step - 1) * 64, step * 64)
            loss = nn.functional.cross_entropy(model(ids[sl]), labels[sl])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 50 == 0:
                print(f"[worker {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="query-intent", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
