"""Ray Train: sentence-pair similarity model on pre-tokenized parts (one .pt part per worker per epoch, listed in
the dataset manifest), DDP over gloo, 2 workers."""
import json
import os

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(16000, 128)
        self.proj = nn.Linear(128, 128)

    def forward(self, a, b):
        za, zb = self.proj(self.emb(a)), self.proj(self.emb(b))
        return nn.functional.cosine_similarity(za, zb)


def train_func(config):
    rank = train.get_context().get_world_rank()
    manifest = json.load(open(config["manifest"]))
    torch.manual_seed(0)
    model = prepare_model(Pair())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        part = manifest["parts"][epoch * 2 + rank]
        data = torch.load(os.path.join(config["root"], part))
        print(f"[worker {rank}] epoch {epoch}: {part} ({len(data['score'])} pairs)", flush=True)
        for i in range(0, len(data["score"]) - 63, 64):
            sim = model(data["a"][i:i + 64], data["b"][i:i + 64])
            loss = nn.functional.mse_loss(sim, data["score"][i:i + 64])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[worker {rank}] epoch {epoch} loss {loss.item():.4f}", flush=True)
        train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"manifest": os.path.abspath("data/sts/manifest.json"),
                                                          "root": os.path.abspath("data/sts")},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="sts-pairs", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
