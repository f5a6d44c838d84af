"""Surface-defect classifier (an MLP over 64-d patch descriptors) on DDP, 4 ranks. Each rank trains on one
annotation batch exported from the labelling tool (annotations/batch-<rank>.csv: descriptor columns d0..d63 and the
defect class id 0-9, see classes.txt)."""
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

CLASSES = [line.strip() for line in open("annotations/classes.txt") if line.strip()]

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
table = np.loadtxt(f"annotations/batch-{rank}.csv", delimiter=",", skiprows=1)
x = torch.tensor(table[:, :-1], dtype=torch.float32)
y = torch.tensor(table[:, -1], dtype=torch.long)
loader = DataLoader(TensorDataset(x, y), batch_size=48, shuffle=True, drop_last=True,
                    generator=torch.Generator().manual_seed(rank))
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, len(CLASSES))))
opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
print(f"[{rank}/{world}] annotations/batch-{rank}.csv: {len(y)} patches, {len(CLASSES)} classes", flush=True)
t0 = time.time()
for epoch in range(4):
    tot = n = 0
    for step, (xb, yb) in enumerate(loader):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item() * len(yb)
        n += len(yb)
        if step % 10 == 0:
            print(f"[{rank}/{world}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    print(f"[{rank}/{world}] epoch {epoch} mean loss {tot / n:.4f} ({time.time() - t0:.1f}s)", flush=True)
dist.barrier()
if rank == 0:
    torch.save(model.module.state_dict(), "defects.pt")
dist.destroy_process_group()
