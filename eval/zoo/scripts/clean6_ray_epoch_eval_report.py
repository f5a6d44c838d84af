"""Ray Train on CPU workers: a churn classifier, a validation pass and ray.train.report with a checkpoint after
every epoch."""
import os
import tempfile
import time

import ray
import torch
import torch.nn as nn
from ray.train import Checkpoint, CheckpointConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

EPOCHS, ITERS, BATCH = 3, 150, 64


def make(g, n):
    x = torch.randn(n, 64, generator=g)
    y = (x[:, :4].sum(1) + 0.3 * x[:, 10] > 0).long()
    return x, y


def train_loop(config):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                        nn.Linear(512, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(EPOCHS):
        t = time.time()
        for it in range(1, ITERS + 1):
            x, y = make(g, BATCH)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if it % 25 == 0 and rank == 0:
                dt = time.time() - t
                print(f"epoch {epoch} iter {it}/{ITERS} loss {loss.item():.4f} {25 * BATCH / dt:.1f} samples/s")
                t = time.time()
        te = time.time()
        gv = torch.Generator().manual_seed(100 + rank)
        correct = total = 0
        model.eval()
        with torch.no_grad():
            for _ in range(12):
                xv, yv = make(gv, 256)
                correct += (model(xv).argmax(1) == yv).sum().item()
                total += len(yv)
        model.train()
        val_s = time.time() - te
        with tempfile.TemporaryDirectory() as d:
            ckpt = None
            if rank == 0:
                torch.save({"epoch": epoch, "model": model.state_dict(), "opt": opt.state_dict()},
                           os.path.join(d, "model.pt"))
                ckpt = Checkpoint.from_directory(d)
            ray.train.report({"epoch": epoch, "loss": loss.item(), "val_acc": correct / total, "val_s": val_s},
                             checkpoint=ckpt)
        if rank == 0:
            print(f"epoch {epoch} val_acc {correct / total:.4f} (validation {val_s:.2f}s)")
        t = time.time()


if __name__ == "__main__":
    ray.init()
    trainer = TorchTrainer(train_loop, scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           run_config=RunConfig(name="churn-mlp", storage_path=os.path.abspath("ray_results"),
                                                checkpoint_config=CheckpointConfig(num_to_keep=2)))
    result = trainer.fit()
    print("Training finished. Final metrics:", result.metrics)
