"""Ray Train: linear-probe style fine-tuning of a small text encoder for toxicity labels; the encoder is frozen and only
the head trains (TRAINABLE lists the parameter-name prefixes that stay trainable). DDP over gloo, 2 workers."""
import os

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

TRAINABLE = ("head.",)


class ToxicityModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(30000, 256)
        self.encoder = nn.Sequential(nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 256))
        self.classifier = nn.Sequential(nn.Dropout(0.1), nn.Linear(256, 6))

    def forward(self, ids):
        return self.classifier(self.encoder(self.embed(ids)))


def train_func(config):
    rank = train.get_context().get_world_rank()
    model = ToxicityModel()
    model.embed.weight.data.normal_(0, 0.02)  # stands in for the pre-trained encoder weights
    n_train = 0
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith(TRAINABLE))
        n_train += p.numel() if p.requires_grad else 0
    print(f"[worker {rank}] trainable parameters: {n_train}", flush=True)
    model = prepare_model(model)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config["lr"])
    for epoch in range(config["epochs"]):
        for step in range(1, 101):
            ids = torch.randint(0, 30000, (64, 40))
            y = (torch.rand(64, 6) < 0.1).float()
            loss = nn.functional.binary_cross_entropy_with_logits(model(ids), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"lr": 3e-4, "epochs": 3},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="toxicity-probe", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
