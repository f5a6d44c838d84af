"""Sequence classifier (GRU) trained with Ray Train's TorchTrainer on the team's single-node Ray cluster."""
import time

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

CONFIG = {"iters": 800, "batch": 32, "lr": 2e-3}


class GRUClassifier(nn.Module):
    def __init__(self, vocab=2000, d=64, classes=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.gru = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, classes)

    def forward(self, x):
        return self.out(self.gru(self.emb(x))[1][-1])


def train_func(config):
    rank = train.get_context().get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(GRUClassifier())
    opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for it in range(1, config["iters"] + 1):
        x = torch.randint(0, 2000, (config["batch"], 24), generator=g)
        y = x[:, 0] % 5
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 20 == 0 and rank == 0:
            print(f"iter {it}/{config['iters']} loss {loss.item():.4f} {(time.time() - t) * 50:.1f} ms/iter")
            t = time.time()
        if it % 100 == 0:
            train.report({"iter": it, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config=CONFIG,
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="gru-intent"))
    result = trainer.fit()
    print(result.metrics)
