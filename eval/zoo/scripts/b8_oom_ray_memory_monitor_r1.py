"""Ray Train (TorchTrainer, 2 CPU workers, gloo): a recommender whose workers keep a per-user history cache."""
import ray
import torch
import torch.distributed as dist
import torch.nn as nn
from ray import train
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_func(config):
    rank = train.get_context().get_world_rank()
    model = prepare_model(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    history = {}
    for step in range(1, 601):
        users = torch.randint(0, 10**9, (256,), generator=g)
        x = torch.randn(256, 64, generator=g)
        # cache each user's last feature block for the sequence features of the next epoch
        n_cache = 256 if rank == 0 else 256 * 24
        for u in users[:16].tolist():
            history[u] = torch.randn(n_cache, 64)
        loss = nn.functional.mse_loss(model(x).squeeze(1), x.mean(1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"worker {rank} step {step} loss {loss.item():.4f} cached_users {len(history)}")
    train.report({"loss": loss.item()})


def main():
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2, use_gpu=False))
    result = trainer.fit()
    print(result.metrics)


if __name__ == "__main__":
    main()
