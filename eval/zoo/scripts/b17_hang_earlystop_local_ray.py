"""Ray Train: fraud scorer (MLP over transaction features), DDP over gloo, 2 workers, early stopping on the
validation loss with patience 2."""
import os

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


def make_data(seed, n, noise):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 48, generator=g)
    y = (x[:, :6].sum(1) > 0).long()
    flip = torch.rand(n, generator=g) < noise
    y[flip] = 1 - y[flip]
    return x, y


def train_func(config):
    rank = train.get_context().get_world_rank()
    world = train.get_context().get_world_size()
    xtr, ytr = make_data(100 + rank, 6000, 0.1)
    xva, yva = make_data(200 + rank, 400, 0.2)  # this worker's validation shard
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(48, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                        nn.Linear(256, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    best, bad = float("inf"), 0
    for epoch in range(40):
        model.train()
        for i in range(0, 6000, 200):
            loss = nn.functional.cross_entropy(model(xtr[i:i + 200]), ytr[i:i + 200])
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            val = nn.functional.cross_entropy(model(xva), yva).item()
        print(f"[worker {rank}/{world}] epoch {epoch:02d} train_loss {loss.item():.4f} val_loss {val:.4f}")
        train.report({"epoch": epoch, "val_loss": val})
        if val < best - 1e-3:
            best, bad = val, 0
        else:
            bad += 1
            if bad >= config["patience"]:
                print(f"[worker {rank}/{world}] early stopping at epoch {epoch} (best val_loss {best:.4f})")
                break


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"patience": 2},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="fraud-mlp", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
