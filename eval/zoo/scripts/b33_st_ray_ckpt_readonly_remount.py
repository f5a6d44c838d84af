"""Demand forecaster (MLP over lagged sales features) trained with Ray Train (TorchTrainer, 2 CPU workers). After
each epoch worker 0 writes a checkpoint directory and hands it to ray.train.report, which persists it under the
run's storage_path on the shared volume."""
import os
import tempfile

import ray
import ray.train
import torch
import torch.nn as nn
import torch.nn.functional as F
from ray.train import Checkpoint, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_func(config):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(56, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                        nn.Linear(512, 28)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(4):
        total = 0.0
        for step in range(1, 201):
            x = torch.randn(128, 56, generator=g)
            y = x[:, :28] * 0.5 + 0.1 * torch.randn(128, 28, generator=g)
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            if step % 50 == 0:
                print(f"worker {rank} epoch {epoch} step {step}/200 mse {total / step:.5f}")
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = None
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "epoch": epoch},
                           os.path.join(tmp, "model.pt"))
                ckpt = Checkpoint.from_directory(tmp)
            ray.train.report({"epoch": epoch, "mse": total / 200}, checkpoint=ckpt)
        print(f"worker {rank} epoch {epoch} done")


if __name__ == "__main__":
    ray.init()
    trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="demand-mlp", storage_path=os.path.abspath("shared/ray_results")))
    result = trainer.fit()
    print(result.metrics, result.checkpoint)
