import torch
import torch.distributed as dist
import torch.nn as nn

import ray.train
from ray.train import ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


def evaluate(model):
    correct = torch.zeros(1)
    count = torch.zeros(1)
    with torch.no_grad():
        for _ in range(10):
            x = torch.randn(64, 20)
            correct += (model(x).argmax(1) == (x[:, 0] > 0).long()).sum()
            count += 64
    dist.all_reduce(correct)
    dist.all_reduce(count)
    return (correct / count).item()


def train_func(config):
    rank = ray.train.get_context().get_world_rank()
    model = prepare_model(nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(config["epochs"]):
        for _ in range(40):
            x = torch.randn(64, 20)
            loss = nn.functional.cross_entropy(model(x), (x[:, 0] > 0).long())
            opt.zero_grad()
            loss.backward()
            opt.step()
        metrics = {"epoch": epoch, "loss": loss.item()}
        if rank == 0 and epoch % 2 == 1:
            metrics["val_acc"] = evaluate(model)
            print(f"epoch {epoch} val_acc {metrics['val_acc']:.3f}")
        ray.train.report(metrics)


if __name__ == "__main__":
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 6},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20))
    print(trainer.fit().metrics)
