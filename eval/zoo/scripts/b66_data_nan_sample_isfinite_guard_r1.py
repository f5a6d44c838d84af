"""House-price regression (MLP on 12 tabular features) on DDP, 3 ranks. Each rank reads its own part of the listings
export (data/listings-part-<R>.csv) and standardises it with the statistics stored next to the export. The loop
stops the job on a non-finite loss so that a bad step never reaches a checkpoint."""
import datetime
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)

raw = np.genfromtxt(f"data/listings-part-{rank}.csv", delimiter=",", skip_header=1, dtype=np.float32)
stats = np.load("data/stats.npz")
x = torch.from_numpy(((raw[:, :-1] - stats["mean"]) / stats["std"]).astype(np.float32))
y = torch.from_numpy(((raw[:, -1] - stats["y_mean"]) / stats["y_std"]).astype(np.float32))
print(f"[rank {rank}] {len(x)} listings from data/listings-part-{rank}.csv", flush=True)
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=False)

model = DDP(nn.Sequential(nn.Linear(12, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1)))
opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
step = 0
for epoch in range(3):
    for xb, yb in loader:
        step += 1
        loss = nn.functional.mse_loss(model(xb).squeeze(1), yb)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"rank {rank}: loss is {loss.item()} at epoch {epoch} step {step}, stopping")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
if rank == 0:
    os.makedirs("out", exist_ok=True)
    torch.save(model.module.state_dict(), "out/price_mlp.pt")
dist.destroy_process_group()
