"""Store-sales forecasting MLP trained with Ray Train (TorchTrainer, 2 CPU workers); each worker reads its own CSV
export of the sales table (data/sales-<rank>.csv) and streams it in batches of 128 rows."""
import csv
import os
import time

import torch
import torch.nn as nn
import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

FEATURES = ["price", "promo", "holiday", "temp", "fuel", "cpi", "unemp", "lag1", "lag7", "lag28"]


def batches(path, bs=128):
    xs, ys = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            xs.append([float(row[k]) for k in FEATURES])
            ys.append(float(row["units"]))
            if len(xs) == bs:
                yield torch.tensor(xs), torch.tensor(ys).unsqueeze(1)
                xs, ys = [], []


def train_func(config):
    rank = ray.train.get_context().get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(len(FEATURES), 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    path = os.path.join(config["data_dir"], f"sales-{rank}.csv")
    for epoch in range(config["epochs"]):
        t0 = time.time()
        n = 0
        for x, y in batches(path):
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            n += 1
        print(f"worker {rank} epoch {epoch} batches {n} loss {loss.item():.4f} ({time.time() - t0:.1f}s)")
        ray.train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 5, "data_dir": os.path.abspath("data")},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="store-sales", storage_path=os.path.abspath("results")))
    result = trainer.fit()
    print(result.metrics)
