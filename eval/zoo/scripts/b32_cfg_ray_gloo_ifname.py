"""Click-through-rate model (hashed field embeddings + MLP) trained with Ray Train (TorchTrainer, 2 CPU workers) on
synthetic impressions; each worker draws its own stream."""
import os

import ray
import ray.train
import torch
import torch.nn as nn
import torch.nn.functional as F
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

FIELDS, BUCKETS = 26, 1 << 16


class CTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(BUCKETS, 16, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, x):
        return self.mlp(self.emb(x)).squeeze(1)


def train_func(config):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    model = prepare_model(CTR())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(config["epochs"]):
        total = 0.0
        for step in range(1, 201):
            x = torch.randint(0, BUCKETS, (256, FIELDS), generator=g)
            y = (torch.rand(256, generator=g) < 0.03).float()
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            if step % 50 == 0:
                print(f"worker {rank} epoch {epoch} step {step} logloss {total / step:.4f}")
        ray.train.report({"epoch": epoch, "logloss": total / 200})


if __name__ == "__main__":
    ray.init()
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 2},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="ctr-daily", storage_path=os.path.abspath("results")))
    result = trainer.fit()
    print(result.metrics)
