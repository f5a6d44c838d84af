"""Fraud-score MLP trained with Ray Train (TorchTrainer, 2 CPU workers, gloo); after the last epoch every worker
validates on its part of the validation set and averages the per-batch loss across workers (like sync_dist)."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

VAL_ROWS = 3073  # the validation export of 2026-11-30


def train_func(config):
    rank, world = ray.train.get_context().get_world_rank(), ray.train.get_context().get_world_size()
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(48, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    val = torch.randn(VAL_ROWS, 48, generator=g)[rank::world]  # every world-th row
    val_batches = list(torch.split(val, 128))
    print(f"worker {rank}: {len(val)} validation rows, {len(val_batches)} batches")
    for epoch in range(config["epochs"]):
        t0 = time.time()
        for _ in range(200):
            x = torch.randn(128, 48, generator=g)
            y = (x[:, :2].sum(1, keepdim=True) > 1).float()
            loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} train_loss {loss.item():.4f} ({time.time() - t0:.1f}s)")
        ray.train.report({"epoch": epoch, "train_loss": loss.item()})
    model.eval()
    losses = []
    with torch.no_grad():
        for vx in val_batches:
            vy = (vx[:, :2].sum(1, keepdim=True) > 1).float()
            vl = nn.functional.binary_cross_entropy_with_logits(model(vx), vy).reshape(1)
            dist.all_reduce(vl)
            losses.append(vl.item() / world)
    print(f"worker {rank}: final val_loss {sum(losses) / len(losses):.4f}")
    if rank == 0:
        ray.train.report({"epoch": config["epochs"], "val_loss": sum(losses) / len(losses)})

if __name__ == "__main__":
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 3},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="fraud-mlp", storage_path=os.path.abspath("results")))
    result = trainer.fit()
    print(result.metrics)
