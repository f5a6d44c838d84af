"""Satellite tile classifier (small CNN) on DDP across two nodes, 2 processes per node; tiles are decoded and augmented
in DataLoader workers. Every 60 steps the model is evaluated on the validation tiles (full 96x96 tiles, large batches)."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
torch.manual_seed(0)
torch.set_num_threads(1)


class Tiles(Dataset):
    def __init__(self, n, size, seed):
        self.n, self.size, self.seed = n, size, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 1000003 + i)
        label = i % 10
        x = torch.rand(4, self.size, self.size, generator=g)
        x[label % 4] += 0.3 * (label / 10)
        return x, label


train_ds, val_ds = Tiles(40000, 48, 1), Tiles(4096, 96, 2)
train_dl = DataLoader(train_ds, batch_size=32, sampler=DistributedSampler(train_ds), num_workers=2)
val_dl = DataLoader(val_ds, batch_size=512, sampler=DistributedSampler(val_ds, shuffle=False), num_workers=2)
model = DDP(nn.Sequential(nn.Conv2d(4, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
print(f"[node{node} rank{rank}] train tiles {len(train_ds)}, val tiles {len(val_ds)}, workers 2", flush=True)


def evaluate():
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in val_dl:
            correct += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    acc = torch.tensor([correct, total], dtype=torch.float64)
    dist.all_reduce(acc)
    model.train()
    return (acc[0] / acc[1]).item()


for step, (x, y) in enumerate(train_dl, 1):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"[node{node} rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    if step % 60 == 0:
        acc = evaluate()
        print(f"[node{node} rank{rank}] step {step} val_acc {acc:.3f}", flush=True)
    if step == 240:
        break
dist.destroy_process_group()
