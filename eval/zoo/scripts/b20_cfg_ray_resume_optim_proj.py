"""Query-document ranker (two bag-of-words towers + MLP) trained with Ray Train on the CPU pool; continues from the
last epoch checkpoint of the running experiment (model and optimizer)."""
import os

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

VOCAB = 30000


class Ranker(nn.Module):
    def __init__(self, d=64, shared_proj=False):
        super().__init__()
        self.q = nn.EmbeddingBag(VOCAB, d)
        self.doc = nn.EmbeddingBag(VOCAB, d)
        self.proj = nn.Linear(d, d) if shared_proj else None  # shared projection for the ANN index
        self.mlp = nn.Sequential(nn.Linear(2 * d, d), nn.ReLU(), nn.Linear(d, 1))

    def forward(self, q, doc):
        hq, hd = self.q(q), self.doc(doc)
        if self.proj is not None:
            hq, hd = self.proj(hq), self.proj(hd)
        return self.mlp(torch.cat([hq, hd], -1)).squeeze(-1)


def train_func(config):
    rank = train.get_context().get_world_rank()
    model = Ranker(shared_proj=config["shared_proj"])
    opt = torch.optim.AdamW(model.parameters(), lr=config["lr"], weight_decay=0.01)
    start = 0
    if config.get("resume_from"):
        ck = torch.load(config["resume_from"], map_location="cpu")
        res = model.load_state_dict(ck["model"], strict=False)
        print(f"[worker {rank}] resumed weights from {config['resume_from']} (epoch {ck['epoch']}, "
              f"missing={res.missing_keys})", flush=True)
        opt.load_state_dict(ck["optimizer"])
        start = ck["epoch"] + 1
    model = prepare_model(model)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(start, start + 3):
        for step in range(60):
            q = torch.randint(0, VOCAB, (128, 8), generator=g)
            d = torch.randint(0, VOCAB, (128, 48), generator=g)
            y = torch.randint(0, 2, (128,), generator=g).float()
            loss = nn.functional.binary_cross_entropy_with_logits(model(q, d), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"[worker {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    config = {"lr": 3e-4, "shared_proj": True, "resume_from": os.path.abspath("ckpt/ranker-e4.pt")}
    trainer = TorchTrainer(train_func, train_loop_config=config,
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="ranker-exp12", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
