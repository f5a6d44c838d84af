import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group(backend="gloo")
rank, world_size = dist.get_rank(), dist.get_world_size()

model = DDP(nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 8)))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)

t0 = time.time()
for step in range(1, 61):
    x = torch.randn(32, 8)
    loss = nn.functional.mse_loss(model(x), x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    # the last rank reports throughput (rank 0 is busy with checkpoints on the cluster)
    if rank == world_size - 1 and step % 15 == 0:
        print(f"step {step} loss {loss.item():.4f} lr {lr_sched.get_last_lr()[0]:.2e} "
              f"{step * 32 * world_size / (time.time() - t0):.0f} samples/s")

dist.destroy_process_group()
