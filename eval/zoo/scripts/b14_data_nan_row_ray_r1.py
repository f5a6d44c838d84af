"""Ray Train: house-price regression from per-worker CSV parts (data/part-<rank>.csv), DDP over gloo, 2 workers.
The loop stops the run when the loss stops being finite."""
import csv
import math
import os

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

DATA = os.path.abspath("data")


def load_part(path):
    rows = list(csv.DictReader(open(path)))
    feats = [[float(r[k]) for k in ("sqft", "rooms", "age", "lat", "lon")] for r in rows]
    prices = [float(r["price"]) for r in rows]
    return torch.tensor(feats), torch.tensor(prices)


def train_func(config):
    rank = train.get_context().get_world_rank()
    x, y = load_part(os.path.join(DATA, f"part-{rank}.csv"))
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    y = y / 1e5
    print(f"[worker {rank}] {len(x)} rows from part-{rank}.csv")
    model = prepare_model(nn.Sequential(nn.Linear(5, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(config["epochs"]):
        perm = torch.randperm(len(x))
        for i in range(0, len(x) - 63, 64):
            b = perm[i:i + 64]
            loss = nn.functional.mse_loss(model(x[b]).squeeze(1), y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if not math.isfinite(loss.item()):
                raise RuntimeError(f"worker {rank}: non-finite loss {loss.item()} at step {step} (epoch {epoch})")
        print(f"[worker {rank}] epoch {epoch} mse {loss.item():.4f}")
        train.report({"epoch": epoch, "mse": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 5},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="house-price-mlp"))
    result = trainer.fit()
    print(result.metrics)
