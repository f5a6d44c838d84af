"""Click-through model trained with Ray Train (TorchTrainer, 2 CPU workers, gloo). Each worker keeps a small replay
buffer of its hardest examples (highest loss) and mixes two of them into every batch after a warm-up."""
import random
from datetime import timedelta

import ray
import torch
import torch.nn as nn
import torch.nn.functional as F
from ray.train import ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


class HardExampleReplay:
    def __init__(self, capacity, seed):
        self.capacity, self.items = capacity, []
        self.rng = random.Random(seed)

    def add(self, xs, ys, losses, k=4):
        for i in losses.topk(k).indices.tolist():
            self.items.append((xs[i], ys[i]))
        self.items = self.items[-self.capacity:]

    def sample(self, n):
        picks = [self.items[self.rng.randint(0, len(self.items))] for _ in range(n)]
        return torch.stack([p[0] for p in picks]), torch.stack([p[1] for p in picks])


def make_data(rank, n=40000):
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(n, 48, generator=g)
    w = torch.randn(48, generator=g)
    y = ((x @ w + 0.3 * torch.randn(n, generator=g)) > 0.8).float()
    return x, y


def train_loop(config):
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    x, y = make_data(rank)
    model = prepare_model(nn.Sequential(nn.Linear(48, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                        nn.Linear(256, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=config["lr"])
    replay = HardExampleReplay(config["replay_capacity"], config["seed"] + rank)
    bs = config["batch_size"]
    for step in range(1, config["steps"] + 1):
        i = (step * bs) % (len(x) - bs)
        xb, yb = x[i:i + bs], y[i:i + bs]
        if step > config["replay_start"]:
            rx, ry = replay.sample(2)
            xb, yb = torch.cat([xb, rx]), torch.cat([yb, ry])
        logits = model(xb).squeeze(1)
        losses = F.binary_cross_entropy_with_logits(logits, yb, reduction="none")
        loss = losses.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        replay.add(xb.detach(), yb, losses.detach())
        if step % 50 == 0:
            print(f"worker {rank} step {step}/{config['steps']} loss {loss.item():.4f}")
            ray.train.report({"step": step, "loss": loss.item()})


def main():
    ray.init(num_cpus=2, include_dashboard=False)
    trainer = TorchTrainer(
        train_loop,
        train_loop_config={"lr": 1e-3, "batch_size": 256, "steps": 600, "replay_capacity": 128, "replay_start": 100,
                           "seed": 28},
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
        torch_config=TorchConfig(backend="gloo", timeout_s=30),
    )
    result = trainer.fit()
    print("final metrics:", result.metrics)


if __name__ == "__main__":
    main()
