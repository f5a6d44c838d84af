import os
import time

import numpy as np
import torch
import torch.nn as nn

import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

DATA_DIR = os.path.abspath("data/embeddings")


def train_func(config):
    rank = ray.train.get_context().get_world_rank()
    path = os.path.join(config["data_dir"], f"part-{rank:03d}.npz")
    print(f"worker {rank} loading {path}")
    arrays = np.load(path)
    x, y = torch.from_numpy(arrays["x"]), torch.from_numpy(arrays["y"]).long()
    model = prepare_model(nn.Sequential(nn.Linear(x.shape[1], 128), nn.ReLU(), nn.Linear(128, 16)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(config["epochs"]):
        t0 = time.time()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 256):
            idx = perm[i:i + 256]
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        ray.train.report({"epoch": epoch, "loss": loss.item(), "epoch_s": time.time() - t0})


if __name__ == "__main__":
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"epochs": 6, "data_dir": DATA_DIR},
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
        run_config=RunConfig(name="probe-head"),
    )
    result = trainer.fit()
    print("final metrics:", result.metrics)
