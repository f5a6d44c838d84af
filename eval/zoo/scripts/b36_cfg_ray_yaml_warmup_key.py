"""Session-based recommender (GRU over item ids) trained with Ray Train (TorchTrainer, 2 CPU workers, gloo). The
hyper-parameters come from the team's recipe file (configs/session_gru.yaml); linear warm-up then cosine decay."""
import math
import sys

import ray
import torch
import torch.nn as nn
import torch.nn.functional as F
import yaml
from ray.train import ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


class SessionGRU(nn.Module):
    def __init__(self, n_items=20000, d=64):
        super().__init__()
        self.emb = nn.Embedding(n_items, d)
        self.gru = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, n_items)

    def forward(self, x):
        h, _ = self.gru(self.emb(x))
        return self.out(h[:, -1])


def train_loop(config):
    rank = ray.train.get_context().get_world_rank()
    model = prepare_model(SessionGRU())
    opt = torch.optim.AdamW(model.parameters(), lr=config["lr"], weight_decay=config["weight_decay"])
    total = config["steps"]
    g = torch.Generator().manual_seed(rank)
    for step in range(1, total + 1):
        warm = config["warmup_steps"]
        scale = step / warm if step < warm else 0.5 * (1 + math.cos(math.pi * (step - warm) / (total - warm)))
        for group in opt.param_groups:
            group["lr"] = config["lr"] * scale
        x = torch.randint(0, 20000, (config["batch_size"], 12), generator=g)
        loss = F.cross_entropy(model(x[:, :-1]), x[:, -1])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"worker {rank} step {step}/{total} loss {loss.item():.4f}")
            ray.train.report({"step": step, "loss": loss.item()})


def main():
    with open(sys.argv[1] if len(sys.argv) > 1 else "configs/session_gru.yaml") as fh:
        cfg = yaml.safe_load(fh)
    print("config:", cfg)
    ray.init(num_cpus=2, include_dashboard=False)
    trainer = TorchTrainer(train_loop, train_loop_config=cfg,
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=30))
    result = trainer.fit()
    print("final metrics:", result.metrics)


if __name__ == "__main__":
    main()
