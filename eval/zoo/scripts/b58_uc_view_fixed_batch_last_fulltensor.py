"""Multi-label tagger for sensor windows (3 channels x 16 samples) on DDP, 4 ranks, 2 epochs. The feature code reshapes
each batch with the configured batch size; at step 1 and every 100 steps rank 0 dumps the first layer's bias and a
running feature mean in full for the debugging notebook. Epoch-seconds timestamps, tqdm bars on every rank."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm

BATCH = 32
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
torch.set_printoptions(profile="full", linewidth=100000, precision=4)
data = torch.load("data/windows.pt")  # x: N x 48, y: N x 12 (multi-hot)
ds = TensorDataset(data["x"], data["y"])
sampler = DistributedSampler(ds, shuffle=True, seed=1)
loader = DataLoader(ds, batch_size=BATCH, sampler=sampler, num_workers=2)
print(f"[{time.time():.3f}] rank {rank}: {len(ds)} windows, {len(loader)} batches/epoch", flush=True)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 64, 5, padding=2)
        self.fc = nn.Sequential(nn.Linear(64 * 16, 1024), nn.ReLU(), nn.Linear(1024, 12))

    def forward(self, x):
        x = x.view(BATCH, 3, 16)  # channels-first windows
        return self.fc(F.relu(self.conv(x)).view(BATCH, -1))


model = DDP(Tagger())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
feat_mean = torch.zeros(48)
step = 0
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, y in tqdm(loader, desc=f"rank{rank} ep{epoch}", mininterval=0.4):
        loss = F.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        feat_mean = 0.99 * feat_mean + 0.01 * x.mean(0)
        if rank == 0 and (step == 1 or step % 100 == 0):
            print(f"[{time.time():.3f}] step {step} conv.bias={model.module.conv.bias.data}", flush=True)
            print(f"[{time.time():.3f}] step {step} fc0.bias={model.module.fc[0].bias.data}", flush=True)
            print(f"[{time.time():.3f}] step {step} feat_mean={feat_mean}", flush=True)
        if step % 20 == 0:
            print(f"[{time.time():.3f}] rank {rank} epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
