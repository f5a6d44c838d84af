"""Ray Train: product-category classifier (MLP over hashed title features), DDP over gloo, 2 workers.
Fine-tunes from the previous job's last checkpoint (copied from the shared results bucket)."""
import argparse
import os
import tempfile

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import Checkpoint, RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


def build():
    return nn.Sequential(nn.Linear(4096, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 48))


def train_func(config):
    rank = train.get_context().get_world_rank()
    model = build()
    state = torch.load(config["init_from"], map_location="cpu")
    model.load_state_dict(state["model"])
    print(f"[worker {rank}] initialised from {config['init_from']} (epoch {state['epoch']})")
    model = prepare_model(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(3):
        for _ in range(50):
            x = torch.rand(64, 4096, generator=g)
            y = torch.randint(0, 48, (64,), generator=g)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[worker {rank}] epoch {epoch} loss {loss.item():.4f}")
        with tempfile.TemporaryDirectory() as d:
            ckpt = None
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "epoch": epoch}, os.path.join(d, "model.pt"))
                ckpt = Checkpoint.from_directory(d)
            train.report({"epoch": epoch, "loss": loss.item()}, checkpoint=ckpt)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--init-from", required=True)
    args = p.parse_args()
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"init_from": os.path.abspath(args.init_from)},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="catclf-ft", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
