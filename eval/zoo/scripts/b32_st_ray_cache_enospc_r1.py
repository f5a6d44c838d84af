"""Session-based recommender (GRU over item sequences) trained with Ray Train (TorchTrainer, 2 CPU workers). Each
worker builds its padded sequence cache once under its node-local cache directory and memory-maps it."""
import os
import time

import numpy as np
import ray
import ray.train
import torch
import torch.nn as nn
import torch.nn.functional as F
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

N_ITEMS, SEQ = 20000, 50


def build_cache(rank, cache_dir, n_sessions):
    path = os.path.join(cache_dir, f"sessions-{rank}.npy")
    if not os.path.exists(path):
        t0 = time.time()
        rng = np.random.default_rng(rank)
        seqs = rng.integers(1, N_ITEMS, (n_sessions, SEQ + 1), dtype=np.int64)
        np.save(path, seqs)
        print(f"worker {rank}: wrote {path} ({os.path.getsize(path) / 2**20:.0f} MiB, {time.time() - t0:.1f}s)")
    return np.load(path, mmap_mode="r")


class SessionGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(N_ITEMS, 64, padding_idx=0)
        self.gru = nn.GRU(64, 64, batch_first=True)
        self.out = nn.Linear(64, N_ITEMS)

    def forward(self, x):
        return self.out(self.gru(self.emb(x))[0][:, -1])


def train_func(config):
    rank = ray.train.get_context().get_world_rank()
    cache_dir = os.path.join(config["cache_root"], f"w{rank}")
    os.makedirs(cache_dir, exist_ok=True)
    seqs = build_cache(rank, cache_dir, config["sessions"])
    model = prepare_model(SessionGRU())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        total = 0.0
        for step, i in enumerate(range(0, 6400, 64), 1):
            b = torch.from_numpy(np.ascontiguousarray(seqs[i:i + 64]))
            loss = F.cross_entropy(model(b[:, :-1]), b[:, -1])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            if step % 25 == 0:
                print(f"worker {rank} epoch {epoch} step {step} loss {total / step:.4f}")
        ray.train.report({"epoch": epoch, "loss": total / step})


if __name__ == "__main__":
    ray.init()
    trainer = TorchTrainer(train_func,
                           train_loop_config={"cache_root": os.path.abspath("cache"), "sessions": 80000},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="sessions-gru", storage_path=os.path.abspath("results")))
    result = trainer.fit()
    print(result.metrics)
