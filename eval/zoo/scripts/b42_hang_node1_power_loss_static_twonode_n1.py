"""MLP-Mixer on image patches (pre-extracted), DDP over two nodes (torchrun static rendezvous), 1 rank per node."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])


class MixerBlock(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.tok = nn.Sequential(nn.Linear(n, 2 * n), nn.GELU(), nn.Linear(2 * n, n))
        self.ch = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.n2(x))


model = DDP(nn.Sequential(nn.Linear(48, 128), *[MixerBlock(64, 128) for _ in range(4)], nn.LayerNorm(128),
                          nn.Flatten(), nn.Linear(64 * 128, 100)))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
print(f"node {node} rank {rank}: mixer-s/4, cifar100 patches, 600 steps", flush=True)
t0 = time.time()
for step in range(1, 601):
    x = torch.randn(32, 64, 48, generator=g)
    y = torch.randint(0, 100, (32,), generator=g)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"node {node} rank {rank}: step {step}/600 loss {loss.item():.4f} "
              f"{(time.time() - t0) * 40:.0f} ms/step", flush=True)
        t0 = time.time()
dist.destroy_process_group()
