"""Ray Train: intent classifier; each worker reads its own jsonl part of the exported dataset."""
import json
import os

import torch
import torch.nn as nn
import ray
from ray import train
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model

DATA = os.path.abspath("data")
VOCAB = 3000


def encode(text):
    ids = [hash(w) % VOCAB for w in text.split()][:16]
    return ids + [0] * (16 - len(ids))


def train_func(config):
    rank = train.get_context().get_world_rank()
    rows = []
    with open(os.path.join(DATA, f"intents-{rank:02d}.jsonl"), encoding="utf-8") as f:
        for line in f:
            rows.append(json.loads(line))
    print(f"[worker {rank}] {len(rows)} examples")
    model = prepare_model(nn.Sequential(nn.EmbeddingBag(VOCAB, 64), nn.Linear(64, 8)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(config["epochs"]):
        tot = 0.0
        for i in range(0, len(rows) - 31, 32):
            b = rows[i:i + 32]
            x = torch.tensor([encode(r["text"]) for r in b])
            y = torch.tensor([r["intent"] for r in b])
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
        train.report({"epoch": epoch, "loss": tot})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 3},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False))
    result = trainer.fit()
    print(result.metrics)
