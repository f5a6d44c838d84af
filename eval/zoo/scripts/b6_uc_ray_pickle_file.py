import csv
import time

import torch
import torch.nn as nn

import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def main():
    metrics_file = open("metrics.csv", "w", newline="")
    writer = csv.writer(metrics_file)
    writer.writerow(["epoch", "rank", "loss", "seconds"])

    def train_func(config):
        rank = ray.train.get_context().get_world_rank()
        model = prepare_model(nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1)))
        opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
        for epoch in range(config["epochs"]):
            t0 = time.time()
            for _ in range(40):
                x = torch.randn(128, 32)
                loss = (model(x).squeeze(-1) - x[:, :4].sum(-1)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            writer.writerow([epoch, rank, f"{loss.item():.4f}", f"{time.time() - t0:.2f}"])
            metrics_file.flush()
            ray.train.report({"epoch": epoch, "loss": loss.item()})

    trainer = TorchTrainer(
        train_func,
        train_loop_config={"lr": 1e-3, "epochs": 8},
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
        run_config=RunConfig(name="reg-mlp"),
    )
    result = trainer.fit()
    print("final:", result.metrics)


if __name__ == "__main__":
    main()
