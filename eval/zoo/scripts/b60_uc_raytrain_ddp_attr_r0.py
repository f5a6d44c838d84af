"""Image classifier (small CNN) with Ray Train's TorchTrainer, 3 CPU workers. Rank 0 logs the classifier weight norm
after every epoch."""
import ray
import ray.train
import ray.train.torch
import torch
import torch.nn as nn
import torch.nn.functional as F
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.classifier = nn.Linear(128, 10)

    def forward(self, x):
        return self.classifier(self.features(x))


def train_func(config):
    torch.set_num_threads(1)
    rank = ray.train.get_context().get_world_rank()
    model = ray.train.torch.prepare_model(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(config["epochs"]):
        for it in range(20):
            x = torch.randn(32, 1, 28, 28, generator=g)
            y = torch.randint(0, 10, (32,), generator=g)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} worker {rank} loss {loss.item():.4f}")
        if rank == 0:
            print(f"epoch {epoch} classifier weight norm {model.classifier.weight.norm().item():.3f}")
        ray.train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=4, include_dashboard=False)
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 3},
                           scaling_config=ScalingConfig(num_workers=3, use_gpu=False))
    result = trainer.fit()
    print(result.metrics)
