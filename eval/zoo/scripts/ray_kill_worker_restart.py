import os
import tempfile

import torch
import torch.nn as nn

import ray.train
from ray.train import Checkpoint, FailureConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_func(config):
    rank = ray.train.get_context().get_world_rank()
    model = prepare_model(nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 64)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = 0
    ckpt = ray.train.get_checkpoint()
    if ckpt:
        with ckpt.as_directory() as d:
            state = torch.load(os.path.join(d, "state.pt"))
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["epoch"] + 1
        print(f"worker {rank}: resumed from epoch {state['epoch']}")
    for epoch in range(start, config["epochs"]):
        for _ in range(60):
            x = torch.randn(32, 64)
            loss = (model(x) - x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")
        with tempfile.TemporaryDirectory() as d:
            checkpoint = None
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "epoch": epoch},
                           os.path.join(d, "state.pt"))
                checkpoint = Checkpoint.from_directory(d)
            ray.train.report({"epoch": epoch, "loss": loss.item()}, checkpoint=checkpoint)


if __name__ == "__main__":
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"epochs": 12},
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
        run_config=RunConfig(name="ae-ft", storage_path=os.path.abspath("ray_results"),
                             failure_config=FailureConfig(max_failures=1)),
    )
    print("done:", trainer.fit().metrics)
