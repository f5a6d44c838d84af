"""Transformer-ish encoder for sequence classification with LayerDrop; DDP static_graph for speed."""
import datetime
import random

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Encoder(nn.Module):
    def __init__(self, d=64, n_layers=6, layerdrop=0.1):
        super().__init__()
        self.emb = nn.Embedding(1000, d)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(d, 4, 128, batch_first=True) for _ in range(n_layers))
        self.head = nn.Linear(d, 3)
        self.layerdrop = layerdrop

    def forward(self, x):
        h = self.emb(x)
        for layer in self.layers:
            if self.training and random.random() < self.layerdrop:
                continue  # LayerDrop (Fan et al. 2019): skip the whole layer
            h = layer(h)
        return self.head(h.mean(1))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    random.seed(1234 + rank)
    torch.manual_seed(0)
    model = DDP(Encoder(), static_graph=True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        x = torch.randint(0, 1000, (16, 32), generator=g)
        y = torch.randint(0, 3, (16,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
