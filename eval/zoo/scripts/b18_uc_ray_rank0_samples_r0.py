"""Ray Train: query-intent classifier (hashed n-grams + MLP), DDP over gloo, 2 workers.
After every epoch the first worker writes a few predictions for the labelling team; then all workers sync."""
import json
import os

import ray
import torch
import torch.distributed as dist
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

INTENTS = ["order_status", "refund", "cancel", "address_change", "payment", "other"]


def train_func(config):
    rank = train.get_context().get_world_rank()
    model = prepare_model(nn.Sequential(nn.EmbeddingBag(50000, 64), nn.Linear(64, 64), nn.ReLU(),
                                        nn.Linear(64, len(INTENTS))))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(4):
        for _ in range(60):
            x = torch.randint(0, 50000, (64, 16), generator=g)
            y = x[:, 0] % len(INTENTS)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[worker {rank}] epoch {epoch} loss {loss.item():.4f}")
        if rank == 0:
            with torch.no_grad():
                q = torch.randint(0, 50000, (8, 16), generator=g)
                probs = model(q).softmax(-1)
            rows = [{"query_ids": q[i].tolist()[:4], "intent": INTENTS[int(p.argmax())], "score": p.max()}
                    for i, p in enumerate(probs)]
            os.makedirs(config["out"], exist_ok=True)
            with open(os.path.join(config["out"], f"samples_epoch{epoch}.jsonl"), "w") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
        dist.barrier()
        train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"out": os.path.abspath("samples")},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="intent-clf", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
