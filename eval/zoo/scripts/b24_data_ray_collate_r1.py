"""Ray Train: product-title intent classifier (bag of token ids + MLP), DDP over gloo, 2 workers; each worker reads its
own pre-tokenized JSON-lines part through a DataLoader with 2 workers and a padding collate_fn."""
import json
import os

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


class Titles(torch.utils.data.Dataset):
    def __init__(self, path):
        self.rows = [json.loads(line) for line in open(path)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        return r["ids"], r["label"]


def pad_collate(batch):
    n = max(len(ids) for ids, _ in batch)
    x = torch.zeros(len(batch), n, dtype=torch.long)
    for k, (ids, _) in enumerate(batch):
        x[k, :len(ids)] = torch.tensor(ids)
    return x, torch.tensor([lab for _, lab in batch])


def train_func(config):
    rank = train.get_context().get_world_rank()
    ds = Titles(os.path.join(config["data"], f"titles-part-{rank:02d}.jsonl"))
    print(f"[rank {rank}] {len(ds)} titles", flush=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, collate_fn=pad_collate,
                                         generator=torch.Generator().manual_seed(rank))
    model = prepare_model(nn.Sequential(nn.EmbeddingBag(30000, 96, padding_idx=0), nn.Linear(96, 40)))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(2):
        for step, (x, y) in enumerate(loader, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 25 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f}", flush=True)
        train.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, train_loop_config={"data": os.path.abspath("data/titles")},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="title-intent", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
