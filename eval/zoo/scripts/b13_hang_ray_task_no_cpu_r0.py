"""Ray Train: query-intent classifier. Worker 0 builds the label vocabulary with a Ray task (so it runs next to the
data) and broadcasts it; the other workers wait for it."""
import json
import os
from datetime import timedelta  # noqa: F401

import ray
import torch
import torch.distributed as dist
import torch.nn as nn
from ray import train
from ray.train import ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

DATA = os.path.abspath("data/queries.jsonl")


@ray.remote
def build_label_vocab(path):
    labels = set()
    with open(path) as f:
        for line in f:
            labels.add(json.loads(line)["intent"])
    return sorted(labels)


def train_func(config):
    rank = train.get_context().get_world_rank()
    vocab = [None]
    if rank == 0:
        print("[worker 0] building label vocabulary ...")
        vocab = [ray.get(build_label_vocab.remote(DATA))]
        print(f"[worker 0] {len(vocab[0])} intents")
    dist.broadcast_object_list(vocab, src=0)
    intents = {k: i for i, k in enumerate(vocab[0])}
    rows = [json.loads(line) for line in open(DATA)][rank::2]
    model = prepare_model(nn.Sequential(nn.EmbeddingBag(5000, 64), nn.Linear(64, len(intents))))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(config["epochs"]):
        for i in range(0, len(rows) - 31, 32):
            b = rows[i:i + 32]
            x = torch.tensor([[hash(w) % 5000 for w in (r["q"].split() + ["<pad>"] * 12)[:12]] for r in b])
            y = torch.tensor([intents[r["intent"]] for r in b])
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 3},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20))
    print(trainer.fit().metrics)
