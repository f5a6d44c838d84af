"""Churn model (MLP on account features) trained with Ray Train (TorchTrainer, 2 CPU workers). Each worker reads its
own contiguous block of the train and validation part files and evaluates on its block after every epoch."""
import glob
import math
import os

import torch
import torch.nn as nn
import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


def my_parts(pattern, rank, world):
    files = sorted(glob.glob(pattern))
    per_worker = math.ceil(len(files) / world)
    return files[rank * per_worker:(rank + 1) * per_worker]


def load(files):
    parts = [torch.load(f) for f in files]
    return torch.cat([p["x"] for p in parts]), torch.cat([p["y"] for p in parts])


def train_func(config):
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    train_files = my_parts(os.path.join(config["data"], "train-*.pt"), rank, world)
    val_files = my_parts(os.path.join(config["data"], "val-*.pt"), rank, world)
    print(f"worker {rank}: train {[os.path.basename(f) for f in train_files]} "
          f"val {[os.path.basename(f) for f in val_files]}")
    x, y = load(train_files)
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(config["epochs"]):
        model.train()
        perm = torch.randperm(len(y), generator=g)
        for i in range(0, len(y) - 127, 128):
            idx = perm[i:i + 128]
            loss = nn.functional.binary_cross_entropy_with_logits(model(x[idx]).squeeze(1), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        preds, labels = [], []
        with torch.no_grad():
            for f in val_files:
                p = torch.load(f)
                preds.append(torch.sigmoid(model(p["x"]).squeeze(1)))
                labels.append(p["y"])
        preds, labels = torch.cat(preds), torch.cat(labels)
        acc = ((preds > 0.5).float() == labels).float().mean().item()
        print(f"worker {rank}: epoch {epoch} train_loss {loss.item():.4f} val_acc {acc:.4f}")
        ray.train.report({"epoch": epoch, "loss": loss.item(), "val_acc": acc})


if __name__ == "__main__":
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 6, "data": os.path.abspath("data/churn")},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="churn-mlp", storage_path=os.path.abspath("results")))
    result = trainer.fit()
    print(result.metrics)
