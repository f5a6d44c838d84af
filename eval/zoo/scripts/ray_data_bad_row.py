import csv
import os

import torch
import torch.nn as nn

import ray.train
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

DATA_DIR = os.path.abspath("data")


def load_shard(path):
    xs, ys = [], []
    with open(path) as f:
        for row in csv.DictReader(f):
            xs.append([float(row[k]) for k in ("f0", "f1", "f2", "f3", "f4", "f5")])
            ys.append(float(row["price"]))
    return torch.tensor(xs), torch.tensor(ys).unsqueeze(1)


def train_func(config):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    files = sorted(os.listdir(config["data_dir"]))
    my_files = files[rank::ctx.get_world_size()]
    print(f"worker {rank}: reading {my_files}")
    parts = [load_shard(os.path.join(config["data_dir"], f)) for f in my_files]
    X = torch.cat([p[0] for p in parts])
    y = torch.cat([p[1] for p in parts])
    model = prepare_model(nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(config["epochs"]):
        perm = torch.randperm(len(X))
        for i in range(0, len(X) - 31, 32):
            idx = perm[i:i + 32]
            loss = nn.functional.mse_loss(model(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        ray.train.report({"epoch": epoch, "mse": loss.item()})


if __name__ == "__main__":
    trainer = TorchTrainer(train_func, train_loop_config={"data_dir": DATA_DIR, "epochs": 5},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False))
    print(trainer.fit().metrics)
