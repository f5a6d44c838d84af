"""ViT-ish patch classifier, 4 processes, tqdm progress bar on rank 0."""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm


class PatchNet(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, stride=4)
        self.mix = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        h = self.patch(x).flatten(2).transpose(1, 2)
        h = h + self.mix(h)
        return self.head(h.mean(1))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    model = DDP(PatchNet())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    steps = 1200
    for step in tqdm(range(steps), disable=rank != 0, desc="train", mininterval=0.5):
        x = torch.randn(16, 3, 32, 32, generator=g)
        y = torch.randint(0, 10, (16,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.barrier()
    if rank == 0:
        print(f"final loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
