"""Ray Train (TorchTrainer) on CPU workers: an MLP on synthetic click data."""
import time

import ray
import torch
import torch.nn as nn
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_loop(config):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    torch.manual_seed(rank)
    model = prepare_model(nn.Sequential(nn.Linear(200, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    w = torch.randn(200)
    t0 = time.time()
    for it in range(1, config["iters"] + 1):
        x = torch.randn(64, 200)
        y = ((x @ w) > 0).float().unsqueeze(1)
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0:
            print(f"[iter {it}] time {time.time() - t0:.2f}s")
            t0 = time.time()
    ray.train.report({"loss": loss.item()})


if __name__ == "__main__":
    trainer = TorchTrainer(train_loop, train_loop_config={"iters": 600},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="ctr-mlp"))
    result = trainer.fit()
    print("final metrics:", result.metrics)
