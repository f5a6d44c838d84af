"""Demand forecasting MLP trained with Ray Train (TorchTrainer, 2 CPU workers); each worker reports its epoch metrics
and worker 0 prints per-epoch progress."""
import os
import time

import torch
import torch.nn as nn
import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_func(config):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 28)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(config["epochs"]):
        t0 = time.time()
        for _ in range(150):
            x = torch.randn(64, 64, generator=g)
            y = torch.randn(64, 28, generator=g)
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f} ({time.time() - t0:.1f}s)")
        ray.train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 20},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="demand-mlp", storage_path=os.path.abspath("results")))
    result = trainer.fit()
    print(result.metrics)
