"""Listing-ranking model (pairwise hinge loss over listing features) trained with Ray Train (TorchTrainer, 3 CPU
workers); each worker prints its own progress every epoch."""
import os
import time

import torch
import torch.nn as nn
import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


def train_func(config):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(96, 192), nn.ReLU(), nn.Linear(192, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)
    w = torch.randn(96, generator=torch.Generator().manual_seed(7))
    for epoch in range(config["epochs"]):
        t0 = time.time()
        for _ in range(100):
            a, b = torch.randn(128, 96, generator=g), torch.randn(128, 96, generator=g)
            sign = torch.sign(a @ w - b @ w)
            loss = torch.relu(1 - sign * (model(a) - model(b)).squeeze(1)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[worker {rank}] epoch {epoch} hinge {loss.item():.4f} ({time.time() - t0:.2f}s)")
        ray.train.report({"epoch": epoch, "hinge": loss.item()})


if __name__ == "__main__":
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 15},
                           scaling_config=ScalingConfig(num_workers=3, use_gpu=False,
                                                        resources_per_worker={"CPU": 0.5}),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="listing-ranker", storage_path=os.path.abspath("results")))
    result = trainer.fit()
    print(result.metrics)
