"""Ray Train: click model on hashed features. A per-rank debug dump (inputs, logits, per-sample losses, gradient
norms) was added while chasing a NaN that only worker 1 saw; it is switched on by the config below."""
import json
import os
import time

import torch
import torch.nn as nn
import ray
from ray import train
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

DEBUG_DIR = os.path.abspath("debug")
CONFIG = {
    "iters": 600,
    "batch_size": 64,
    "lr": 1e-3,
    "debug_rank": 1,  # dump everything on this worker ...
    "debug_from": 200,  # ... from this iteration on
}


def train_func(config):
    rank = train.get_context().get_world_rank()
    torch.set_num_threads(1)
    model = prepare_model(nn.Sequential(nn.EmbeddingBag(50_000, 32, mode="sum"), nn.Linear(32, 64), nn.ReLU(),
                                        nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
    g = torch.Generator().manual_seed(rank)
    os.makedirs(DEBUG_DIR, exist_ok=True)
    t = time.time()
    for it in range(1, config["iters"] + 1):
        x = torch.randint(0, 50_000, (config["batch_size"], 24), generator=g)
        y = (x[:, 0] % 5 == 0).float()
        logits = model(x).squeeze(1)
        per_sample = nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="none")
        loss = per_sample.mean()
        opt.zero_grad()
        loss.backward()
        if rank == config["debug_rank"] and it >= config["debug_from"]:
            dump = {"iter": it, "inputs": x.tolist(), "logits": logits.tolist(), "per_sample_loss": per_sample.tolist(),
                    "grad_norms": {n: p.grad.norm().item() for n, p in model.named_parameters()},
                    "params": {n: p.detach().flatten()[:10000].tolist() for n, p in model.named_parameters()}}
            with open(os.path.join(DEBUG_DIR, f"rank{rank}_iter{it:05d}.json"), "w") as f:
                json.dump(dump, f)
        opt.step()
        if rank == 0 and it % 20 == 0:
            print(f"iter {it}/{config['iters']} loss {loss.item():.4f} {(time.time() - t) * 50:.1f} ms/iter")
            t = time.time()
        if it % 100 == 0:
            train.report({"iter": it, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config=CONFIG,
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False))
    result = trainer.fit()
    print(result.metrics)
