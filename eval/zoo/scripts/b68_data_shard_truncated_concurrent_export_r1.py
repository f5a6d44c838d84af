"""Fraud-score model on DDP, 3 ranks. Each rank trains on its own binary shard of transaction records
(data/txn-shard-R.bin: float32 records of 48 features + label), read batch by batch with np.fromfile at the
record offset; the number of records is taken from the file size at start."""
import datetime
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

REC = 49  # 48 features + label, float32
BATCH = 128
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
path = f"data/txn-shard-{rank}.bin"
n_rec = os.path.getsize(path) // (REC * 4)
n_batches = n_rec // BATCH
print(f"[rank{rank}] {path}: {n_rec} records, {n_batches} batches per epoch", flush=True)


def batch(i):
    with open(path, "rb") as f:
        a = np.fromfile(f, dtype=np.float32, count=BATCH * REC, offset=i * BATCH * REC * 4)
    a = a.reshape(BATCH, REC)
    return torch.from_numpy(a[:, :48].copy()), torch.from_numpy(a[:, 48].copy())


model = DDP(nn.Sequential(nn.Linear(48, 256), nn.ReLU(), nn.Linear(256, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
step = 0
for epoch in range(3):
    for i in range(n_batches):
        x, y = batch(i)
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 20 == 0:
            print(f"[rank{rank}] epoch {epoch} batch {i}/{n_batches} step {step} loss {loss.item():.4f}", flush=True)
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
