"""Contrastive pre-training of a small image/text projection (DDP over gloo), launched from the cluster's job script."""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.img = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 128))
        self.txt = nn.Sequential(nn.Linear(300, 256), nn.ReLU(), nn.Linear(256, 128))
        self.logit_scale = nn.Parameter(torch.tensor(2.659))

    def forward(self, a, b):
        return F.normalize(self.img(a), dim=-1), F.normalize(self.txt(b), dim=-1), self.logit_scale.exp()


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(TwoTower())
    opt = torch.optim.AdamW(model.parameters(), 5e-4)
    g = torch.Generator().manual_seed(rank)
    for step in range(300):
        a, b = torch.randn(64, 512, generator=g), torch.randn(64, 300, generator=g)
        ia, tb, s = model(a, b)
        logits = s * ia @ tb.t()
        target = torch.arange(64)
        loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 25 == 0:
            print(f"step {step:4d} | loss {loss.item():.4f} | scale {s.item():.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
