"""Tiny segmentation-style convnet; a DataLoader with 2 workers (spawn context: forking after the process group's
threads started gave us deadlocks before) builds the synthetic masks."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Masks(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.rand(1, 32, 32, generator=g)
        return x, (x > 0.5).long().squeeze(0)


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank = dist.get_rank()
print(f"rank {rank} of {dist.get_world_size()} initialised (pid {os.getpid()})", flush=True)
ds = Masks()
loader = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds), num_workers=2, multiprocessing_context="spawn")
model = DDP(nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 2, 3, padding=1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 10 == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
