"""Ray Train: a review-rating regressor (bag of words + MLP), DDP over gloo, 2 workers; each worker builds its
vocabulary from its own review shard before training."""
import collections
import os
import random
import time

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

WORDS = [f"tok{i}" for i in range(40000)]


def train_func(config):
    rank = train.get_context().get_world_rank()
    rng = random.Random(rank)
    print(f"[rank {rank}] building vocabulary from reviews-{rank:02d}.txt", flush=True)
    counts = collections.Counter()
    docs = []
    t0 = time.time()
    for i in range(1, 800001):
        doc = [rng.choice(WORDS) for _ in range(12)]
        counts.update(doc)
        docs.append(doc)
        if i % 200000 == 0:
            print(f"[rank {rank}] vocab: {i}/800000 reviews, {len(counts)} types, {time.time() - t0:.1f}s", flush=True)
    vocab = {w: k for k, (w, _) in enumerate(counts.most_common(20000))}
    model = prepare_model(nn.Sequential(nn.EmbeddingBag(20000, 128), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for step in range(1, 201):
            batch = docs[(step * 64) % len(docs):(step * 64) % len(docs) + 64]
            ids = torch.tensor([[vocab.get(w, 0) for w in d] for d in batch])
            y = torch.rand(len(batch), 1) * 5
            loss = nn.functional.mse_loss(model(ids), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 100 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step}/200 loss {loss.item():.4f}", flush=True)
        train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="review-rating", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
