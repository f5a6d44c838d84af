"""Ray Train (TorchTrainer) on CPU workers, reporting metrics with a checkpoint every 100 iterations."""
import os
import tempfile
import time

import ray
import torch
import torch.nn as nn
from ray.train import Checkpoint, CheckpointConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_loop(config):
    rank = ray.train.get_context().get_world_rank()
    torch.manual_seed(rank)
    model = prepare_model(nn.Sequential(nn.Linear(200, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    w = torch.randn(200)
    t0 = time.time()
    for it in range(1, config["iters"] + 1):
        x = torch.randn(64, 200)
        loss = nn.functional.mse_loss(model(x), (x @ w).unsqueeze(1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0:
            print(f"[iter {it}] time {time.time() - t0:.2f}s")
            t0 = time.time()
        if it % 100 == 0:
            with tempfile.TemporaryDirectory() as d:
                ckpt = None
                if rank == 0:
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "iter": it},
                               os.path.join(d, "model.pt"))
                    ckpt = Checkpoint.from_directory(d)
                ray.train.report({"loss": loss.item(), "iter": it}, checkpoint=ckpt)


if __name__ == "__main__":
    trainer = TorchTrainer(train_loop, train_loop_config={"iters": 500},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="reg-mlp", checkpoint_config=CheckpointConfig(num_to_keep=2)))
    result = trainer.fit()
    print("best checkpoint:", result.checkpoint)
    print("final metrics:", result.metrics)
