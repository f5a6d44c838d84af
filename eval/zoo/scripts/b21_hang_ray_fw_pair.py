"""Ray Train: tabular churn model, DDP over gloo, 2 workers (CPU)."""
import os
import time

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


def train_func(config):
    rank = train.get_context().get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for it in range(1, config["iters"] + 1):
        x = torch.randn(128, 64, generator=g)
        y = (x[:, :4].sum(1, keepdim=True) > 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 100 == 0:
            print(f"iter {it}/{config['iters']} loss {loss.item():.4f} {1000 * (time.time() - t) / 100:.1f} ms/iter")
            t = time.time()
            train.report({"iter": it, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"iters": 3000},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="churn-mlp", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
