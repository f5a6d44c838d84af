import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, epochs=3):
        dist.init_process_group("gloo")
        self.rank = dist.get_rank()
        self.epochs = epochs
        x = torch.randn(2048, 10)
        y = (x @ torch.randn(10, 1)).squeeze(1)
        ds = TensorDataset(x, y)
        self.sampler = DistributedSampler(ds)
        self.loader = DataLoader(ds, batch_size=64, sampler=self.sampler)
        print(f"[rank {self.rank}] building model", flush=True)
        self.model = DDP(nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 1)))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)

    def train(self):
        for epoch in range(self.epochs):
            self.sampler.set_epoch(epoch)
            for x, y in self.loader:
                loss = nn.functional.mse_loss(self.model(x).squeeze(1), y)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
            print(f"[rank {self.rank}] epoch {epoch} loss {loss.item():.4f}", flush=True)
        dist.destroy_process_group()


if __name__ == "__main__":
    Trainer().train()
