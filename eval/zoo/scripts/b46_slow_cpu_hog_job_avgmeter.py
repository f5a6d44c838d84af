"""Image classifier (a small CNN on 32x32 crops) on DDP, 3 ranks, written after PyTorch's ImageNet example: every rank
prints its progress line every 10 batches with the batch time and data time as 'value (running average)'."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)


class AverageMeter:
    def __init__(self, name, fmt=":f"):
        self.name, self.fmt = name, fmt
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        self.val, self.sum, self.count = val, self.sum + val * n, self.count + n
        self.avg = self.sum / self.count

    def __str__(self):
        return ("{name} {val" + self.fmt + "} ({avg" + self.fmt + "})").format(**self.__dict__)


torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Conv2d(3, 24, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(24, 48, 3, padding=1),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(48 * 8 * 8, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(rank)
N = 300
batch_time, data_time, losses = AverageMeter("Time", ":6.3f"), AverageMeter("Data", ":6.3f"), AverageMeter("Loss", ":.4e")
end = time.time()
for i in range(N):
    x = torch.randn(48, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (48,), generator=g)
    x[torch.arange(48), y % 3, :4, :4] += 2.0
    data_time.update(time.time() - end)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.update(loss.item(), 48)
    batch_time.update(time.time() - end)
    end = time.time()
    if i % 10 == 0:
        print(f"[rank{rank}] Epoch: [0][{i:3d}/{N}]\t{batch_time}\t{data_time}\t{losses}", flush=True)
dist.barrier()
print(f"[rank{rank}] * epoch 0 done, {batch_time.avg:.3f} s/batch", flush=True)
dist.destroy_process_group()
