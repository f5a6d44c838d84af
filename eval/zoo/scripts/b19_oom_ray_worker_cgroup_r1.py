"""Ray Train: product-image embedding model on pre-decoded thumbnails, DDP over gloo, 2 workers; each worker's
DataLoader (2 processes) decodes thumbnails and keeps the decoded arrays in a per-process cache."""
import os
import time

import numpy as np
import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


class Thumbs(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        self.n, self.seed, self.cache = n, seed, {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i not in self.cache:  # "decode" once, then serve from memory
            rng = np.random.default_rng(self.seed * 100000 + i)
            self.cache[i] = rng.random((3, 96, 96), dtype=np.float32)
        x = torch.from_numpy(self.cache[i])
        return x, i % 50


def train_func(config):
    rank = train.get_context().get_world_rank()
    print(f"[worker {rank}] building catalogue index", flush=True)
    time.sleep(3)  # catalogue index (ids -> shards)
    loader = torch.utils.data.DataLoader(Thumbs(6000, rank), batch_size=64, shuffle=True, num_workers=2,
                                         persistent_workers=True)
    model = prepare_model(nn.Sequential(nn.Conv2d(3, 16, 5, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
                                        nn.Flatten(), nn.Linear(256, 50)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"[worker {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="thumb-embed", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
