"""Churn model (feature MLP with embeddings for plan and region) on two CPU nodes, DDP over gloo. The training
precision comes from the environment (TRAIN_PRECISION, set per cluster in the team's node profile; fp32 by
default), as the team's other jobs read it."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK, NODE = int(os.environ["RANK"]), int(os.environ["GROUP_RANK"])
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def say(msg):
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [node{NODE} rank{RANK}] {msg}", flush=True)


class Churn(nn.Module):
    def __init__(self):
        super().__init__()
        self.plan = nn.Embedding(40, 16)
        self.region = nn.Embedding(300, 16)
        self.mlp = nn.Sequential(nn.Linear(32 + 48, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, plan, region, num):
        return self.mlp(torch.cat([self.plan(plan), self.region(region), num], -1)).squeeze(-1)


def main():
    dtype = DTYPES[os.environ.get("TRAIN_PRECISION", "fp32")]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    say(f"process group up: world size {dist.get_world_size()}")
    torch.manual_seed(0)
    model = Churn().to(dtype)
    say(f"model: {sum(p.numel() for p in model.parameters())} parameters")
    model = DDP(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(RANK)
    for step in range(1, 1001):
        plan, region = torch.randint(0, 40, (256,), generator=g), torch.randint(0, 300, (256,), generator=g)
        num = torch.randn(256, 48, generator=g).to(dtype)
        y = (num[:, 0] > 0.5).to(dtype)
        loss = nn.functional.binary_cross_entropy_with_logits(model(plan, region, num), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            say(f"step {step}/1000 loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
