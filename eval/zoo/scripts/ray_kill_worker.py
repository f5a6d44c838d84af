import time

import torch
import torch.nn as nn

import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_func(config):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    model = prepare_model(nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 128)))
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    step = 0
    for epoch in range(config["epochs"]):
        t0 = time.time()
        for _ in range(config["steps_per_epoch"]):
            x = torch.randn(64, 128)
            loss = (model(x) - x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            time.sleep(0.01)
        if rank == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)")
        ray.train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"epochs": 12, "steps_per_epoch": 50},
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
        run_config=RunConfig(name="autoenc-3w"),
    )
    result = trainer.fit()
    print("done:", result.metrics)
