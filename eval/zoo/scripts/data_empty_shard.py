import glob
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()

files = sorted(glob.glob("data/*.csv"))
my_files = files[rank::world]
rows = []
for fn in my_files:
    with open(fn) as f:
        next(f)  # header
        rows += [[float(v) for v in line.split(",")] for line in f if line.strip()]
print(f"rank {rank}: {len(my_files)} files, {len(rows)} rows")
t = torch.tensor(rows).reshape(-1, 4)
loader = DataLoader(TensorDataset(t[:, :3], t[:, 3:]), batch_size=8, shuffle=True)

model = DDP(torch.nn.Linear(3, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(5):
    for xb, yb in loader:
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
dist.destroy_process_group()
