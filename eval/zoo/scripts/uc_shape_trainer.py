import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Backbone(nn.Module):
    def __init__(self, width=128):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(20, width), nn.GELU(), nn.Linear(width, width), nn.GELU())

    def forward(self, x):
        return self.layers(x)


class Trainer:
    def __init__(self, args):
        self.args = args
        self.rank = int(os.environ["RANK"])
        # head kept from the old 64-wide backbone
        self.model = DDP(nn.Sequential(Backbone(width=args.width), nn.Linear(64, 10)))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=args.lr, momentum=0.9)
        self.crit = nn.CrossEntropyLoss()

    def train_step(self, batch):
        x, y = batch
        self.opt.zero_grad(set_to_none=True)
        loss = self.crit(self.model(x), y)
        loss.backward()
        self.opt.step()
        return loss.item()

    def fit(self):
        for it in range(self.args.steps):
            batch = torch.randn(8, 20), torch.randint(0, 10, (8,))
            loss = self.train_step(batch)
            if it % 10 == 0 and self.rank == 0:
                print(f"[it {it}] loss={loss:.3f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--steps", type=int, default=100)
    args = p.parse_args()
    dist.init_process_group(backend="gloo")
    print(f"rank {dist.get_rank()}/{dist.get_world_size()} starting")
    Trainer(args).fit()
    dist.destroy_process_group()
