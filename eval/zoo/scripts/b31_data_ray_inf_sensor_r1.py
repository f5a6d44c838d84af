"""Energy-load forecaster (MLP over 24 h of sensor readings) trained with Ray Train (TorchTrainer, 2 CPU workers);
each worker reads its own site's part of the sensor export."""
import math
import os

import numpy as np
import ray
import ray.train
import torch
import torch.nn as nn
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_func(config):
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    part = np.load(os.path.join(config["data_dir"], f"site-{rank}.npz"))
    x = torch.from_numpy(part["x"].astype(np.float32))
    y = torch.from_numpy(part["y"].astype(np.float32))
    mu, sd = x[:2000].mean(0), x[:2000].std(0) + 1e-6
    x = (x - mu) / sd
    print(f"worker {rank}/{world}: {len(x)} windows from site-{rank}.npz")
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(96, 128), nn.GELU(), nn.Linear(128, 64), nn.GELU(),
                                        nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
    g = torch.Generator().manual_seed(rank)
    for epoch in range(config["epochs"]):
        perm = torch.randperm(len(x), generator=g)
        total, n = 0.0, 0
        for i in range(0, len(x) - config["batch_size"] + 1, config["batch_size"]):
            idx = perm[i:i + config["batch_size"]]
            loss = nn.functional.mse_loss(model(x[idx]).squeeze(1), y[idx])
            loss_value = loss.item()
            if not math.isfinite(loss_value):
                raise FloatingPointError(f"Loss is {loss_value}, stopping training")
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss_value
            n += 1
            if n % 40 == 0:
                print(f"worker {rank} epoch {epoch} step {n} loss {total / n:.4f}")
        ray.train.report({"epoch": epoch, "loss": total / n})


if __name__ == "__main__":
    ray.init()
    trainer = TorchTrainer(train_func,
                           train_loop_config={"data_dir": os.path.abspath("data"), "batch_size": 64, "lr": 1e-3,
                                              "epochs": 3},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="load-forecast", storage_path=os.path.abspath("results")))
    result = trainer.fit()
    print(result.metrics)
