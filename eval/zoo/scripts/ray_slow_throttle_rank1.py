import time

import torch
import torch.nn as nn

import ray.train
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_func(config):
    rank = ray.train.get_context().get_world_rank()
    model = prepare_model(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t_last = time.perf_counter()
    for step in range(1, config["steps"] + 1):
        x = torch.randn(32, 256)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.03)  # host-side batch preparation
        if step % 10 == 0:
            now = time.perf_counter()
            print(f"rank={rank} step {step} loss={loss.item():.4f} step_time_ms={(now - t_last) * 100:.1f}")
            t_last = now
        if step % 50 == 0:
            ray.train.report({"step": step, "loss": loss.item()})


if __name__ == "__main__":
    trainer = TorchTrainer(train_func, train_loop_config={"steps": 300},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False))
    print(trainer.fit().metrics)
