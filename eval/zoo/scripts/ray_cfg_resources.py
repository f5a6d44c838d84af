import torch
import torch.nn as nn

import ray.train
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_func(config):
    model = prepare_model(nn.Linear(64, 64))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(config["epochs"]):
        for _ in range(100):
            x = torch.randn(32, 64)
            loss = (model(x) - x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        ray.train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    # 4 CPU threads per worker for the intra-op pool
    scaling = ScalingConfig(num_workers=2, use_gpu=False, resources_per_worker={"CPU": 4})
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 3}, scaling_config=scaling)
    print(trainer.fit().metrics)
