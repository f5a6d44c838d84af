"""Rating-prediction model (matrix factorisation with biases) trained with Ray Train's TorchTrainer on the
local CPU box (2 workers, gloo). The ratings were exported next to the script (data/ratings-train.pt)."""
import os

import ray
import torch
import torch.nn as nn
import torch.nn.functional as F
from ray.train import ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer, prepare_model

DATA = "data/ratings-train.pt"


class MF(nn.Module):
    def __init__(self, n_users=6040, n_items=3706, d=32):
        super().__init__()
        self.u = nn.Embedding(n_users, d)
        self.i = nn.Embedding(n_items, d)
        self.ub = nn.Embedding(n_users, 1)
        self.ib = nn.Embedding(n_items, 1)

    def forward(self, u, i):
        return (self.u(u) * self.i(i)).sum(-1) + self.ub(u).squeeze(-1) + self.ib(i).squeeze(-1) + 3.5


def train_loop(config):
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    data = torch.load(DATA)
    u, i, r = (t[rank::world] for t in (data["user"], data["item"], data["rating"]))
    print(f"worker {rank}: {len(r)} ratings")
    model = prepare_model(MF())
    opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        perm = torch.randperm(len(r))
        for s in range(0, len(r) - 1023, 1024):
            idx = perm[s:s + 1024]
            loss = F.mse_loss(model(u[idx], i[idx]), r[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"worker {rank} epoch {epoch} rmse {loss.item() ** 0.5:.4f}")
        ray.train.report({"epoch": epoch, "rmse": loss.item() ** 0.5})


def main():
    print(f"ratings file: {DATA} ({os.path.getsize(DATA) / 1e6:.1f} MB)")
    ray.init(num_cpus=2, include_dashboard=False)
    trainer = TorchTrainer(train_loop, train_loop_config={"lr": 5e-3, "epochs": 3},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=30))
    result = trainer.fit()
    print("final metrics:", result.metrics)


if __name__ == "__main__":
    main()
