"""Ray Train: a small transformer encoder for log-line anomaly scoring, DDP over gloo, 2 workers; a checkpoint
reported to Ray at the end of every epoch (model + optimizer, written by worker 0)."""
import os
import tempfile
import time

import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import Checkpoint, RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20000, 256)
        layer = nn.TransformerEncoderLayer(256, 4, 512, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 4)
        self.head = nn.Linear(256, 2)

    def forward(self, x):
        return self.head(self.enc(self.emb(x)).mean(1))


def train_func(config):
    rank = train.get_context().get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(Encoder())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(4):
        t0 = time.time()
        for step in range(1, 41):
            x, y = torch.randint(0, 20000, (16, 32), generator=g), torch.randint(0, 2, (16,), generator=g)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step}/40 loss {loss.item():.4f}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = None
            if rank == 0:
                print(f"[rank {rank}] epoch {epoch} done in {time.time() - t0:.1f}s, writing checkpoint", flush=True)
                torch.save({"model": model.module.state_dict(), "optim": opt.state_dict(), "epoch": epoch},
                           os.path.join(tmp, "state.pt"))
                ckpt = Checkpoint.from_directory(tmp)
            train.report({"epoch": epoch, "loss": loss.item()}, checkpoint=ckpt)


if __name__ == "__main__":
    ray.init(num_cpus=2)
    trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=20),
                           run_config=RunConfig(name="loganomaly-enc", storage_path=os.path.abspath("ray_results")))
    result = trainer.fit()
    print(result.metrics)
