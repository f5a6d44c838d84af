"""Click-through-rate model (MLP over dense features) on DDP as a PyTorchJob (master + workers). Each pod reads the
feature export of its own partition (features/part-0000<RANK>.npz)."""
import datetime
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

N_FEATURES = 128

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
pod = os.environ.get("HOSTNAME", f"rank{rank}")
part = np.load(f"features/part-{rank:05d}.npz")
x_all = torch.from_numpy(part["x"])
y_all = torch.from_numpy(part["y"]).float()
print(f"{pod} rank={rank}/{world} loaded features/part-{rank:05d}.npz: {len(y_all)} rows, export {part['export_id']}",
      flush=True)
model = DDP(nn.Sequential(nn.Linear(N_FEATURES, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
bs = 256
for epoch in range(3):
    for it in range(len(y_all) // bs):
        x, y = x_all[it * bs:(it + 1) * bs], y_all[it * bs:(it + 1) * bs]
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0:
            print(f"epoch {epoch} iter {it} rank {rank} logloss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
