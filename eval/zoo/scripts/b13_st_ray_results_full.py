"""Ray Train: churn model; checkpoints go to the team's shared results volume (RunConfig.storage_path)."""
import os
import tempfile

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import Checkpoint, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

RESULTS = os.path.abspath("shared/results")


def train_func(config):
    ctx = train.get_context()
    rank = ctx.get_world_rank()
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(4000, 20, generator=g)
    y = (x[:, 0] - x[:, 2] > 0).float()
    model = prepare_model(nn.Sequential(nn.Linear(20, 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(config["epochs"]):
        for i in range(0, 4000, 50):
            loss = nn.functional.binary_cross_entropy_with_logits(model(x[i:i + 50]).squeeze(1), y[i:i + 50])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[worker {rank}] epoch {epoch} loss {loss.item():.4f}")
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = None
            if rank == 0:
                torch.save(model.module.state_dict(), os.path.join(tmp, "model.pt"))
                ckpt = Checkpoint.from_directory(tmp)
            train.report({"epoch": epoch, "loss": loss.item()}, checkpoint=ckpt)


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 6},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="churn-mlp", storage_path=RESULTS))
    result = trainer.fit()
    print(result.metrics)
