"""Loan-default model trained with Ray Train (TorchTrainer, 2 CPU workers), one-cycle learning-rate schedule; the
schedule's length is worked out from the table's size, the global batch and the number of epochs."""
import os

import numpy as np
import ray
import ray.train
import torch
import torch.nn as nn
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_data_loader, prepare_model


def train_func(config):
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    d = np.load(config["data"])
    ds = torch.utils.data.TensorDataset(torch.from_numpy(d["x"]), torch.from_numpy(d["y"]))
    loader = prepare_data_loader(torch.utils.data.DataLoader(ds, batch_size=config["batch_size"], shuffle=True))
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(48, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                                        nn.Linear(64, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=config["lr"])
    steps_per_epoch = len(ds) // (config["batch_size"] * world)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=config["lr"],
                                                total_steps=config["epochs"] * steps_per_epoch)
    if rank == 0:
        print(f"{len(ds)} rows, {world} workers, {steps_per_epoch} steps/epoch, {config['epochs']} epochs")
    for epoch in range(config["epochs"]):
        if world > 1:
            loader.sampler.set_epoch(epoch)
        total, n = 0.0, 0
        for x, y in loader:
            loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item()
            n += 1
        print(f"worker {rank} epoch {epoch}: {n} steps, mean loss {total / n:.4f}, lr {sched.get_last_lr()[0]:.2e}")
        ray.train.report({"epoch": epoch, "loss": total / n})


if __name__ == "__main__":
    ray.init()
    trainer = TorchTrainer(train_func,
                           train_loop_config={"data": os.path.abspath("data/loans.npz"), "batch_size": 64,
                                              "lr": 3e-3, "epochs": 4},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="loan-default", storage_path=os.path.abspath("results")))
    result = trainer.fit()
    print(result.metrics)
