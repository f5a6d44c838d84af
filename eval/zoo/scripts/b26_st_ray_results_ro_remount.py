"""Ray Train: delivery-time regressor; a checkpoint after every epoch to the team's shared results volume
(RunConfig.storage_path)."""
import os
import tempfile

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import Checkpoint, CheckpointConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

RESULTS = os.path.abspath("shared/results")


def train_func(config):
    rank = train.get_context().get_world_rank()
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(6000, 32, generator=g)
    y = x[:, :4].sum(1, keepdim=True) + 0.1 * torch.randn(6000, 1, generator=g)
    model = prepare_model(nn.Sequential(nn.Linear(32, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                        nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(config["epochs"]):
        for i in range(0, 6000, 100):
            loss = nn.functional.mse_loss(model(x[i:i + 100]), y[i:i + 100])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[worker {rank}] epoch {epoch} train_mse {loss.item():.4f}")
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = None
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "epoch": epoch},
                           os.path.join(tmp, "checkpoint.pt"))
                ckpt = Checkpoint.from_directory(tmp)
            train.report({"epoch": epoch, "train_mse": loss.item()}, checkpoint=ckpt)


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 8},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="eta-mlp", storage_path=RESULTS,
                                                checkpoint_config=CheckpointConfig(num_to_keep=2)))
    result = trainer.fit()
    print(result.metrics)
