"""Defect classifier for 16x16 grayscale inspection patches (MLP) on DDP, 3 ranks. Each rank trains on one line's
exported patches (data/line-<R>/patches.npy, float32 in [0, 1], labels.npy). Gradients are clipped to max_norm 1.0
and the job asserts the pre-clip norm stays below 100: a norm that large means the run is already broken."""
import datetime

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)

x = torch.from_numpy(np.load(f"data/line-{rank}/patches.npy")).flatten(1)
y = torch.from_numpy(np.load(f"data/line-{rank}/labels.npy"))
print(f"rank {rank}: {len(x)} patches from data/line-{rank}", flush=True)
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=False)
model = DDP(nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
MAX_NORM = 1.0
for step, (xb, yb) in enumerate(loader, 1):
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    if step % 5 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f} grad_norm {gnorm.item():.3f}", flush=True)
    assert gnorm < 100 * MAX_NORM, f"grad norm {gnorm.item():.1f} at step {step} (rank {rank} loss {loss.item():.2f})"
    opt.step()
dist.destroy_process_group()
