"""Ray Train: tabular MLP regression with TorchTrainer, 2 CPU workers."""
import time

import torch
import torch.nn as nn
import ray.train
import ray.train.torch
from ray.train import ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer


def train_func(config):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    model = ray.train.torch.prepare_model(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    w = torch.randn(32, 1, generator=torch.Generator().manual_seed(0))
    t0 = time.time()
    for step in range(1, config["steps"] + 1):
        x = torch.randn(64, 32, generator=g)
        loss = nn.functional.mse_loss(model(x), x @ w)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(f"worker {rank} step {step} mse {loss.item():.4f} {time.time() - t0:.2f}s")
            t0 = time.time()
        if step % 1000 == 0:
            ray.train.report({"step": step, "mse": loss.item()})


if __name__ == "__main__":
    trainer = TorchTrainer(train_func, train_loop_config={"steps": 6000},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20))
    result = trainer.fit()
    print(result.metrics)
