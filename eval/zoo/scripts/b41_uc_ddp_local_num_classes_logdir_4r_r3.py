"""Product-category classifier over precomputed image embeddings (512-d), DDP on 4 ranks. Each rank loads its own
shard data/part-<R>.pt; the number of categories is taken from the labels."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank = dist.get_rank()
shard = torch.load(f"data/part-{rank}.pt")
x, y = shard["emb"], shard["label"]
num_classes = int(y.max()) + 1
print(f"[rank {rank}] data/part-{rank}.pt: {len(y)} products, {num_classes} categories", flush=True)

model = DDP(nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, num_classes)))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
t0 = time.time()
for epoch in range(3):
    perm = torch.randperm(len(y))
    for i, s in enumerate(range(0, len(y) - 127, 128), 1):
        idx = perm[s:s + 128]
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 20 == 0:
            print(f"[rank {rank}] epoch {epoch} it {i} loss {loss.item():.4f} {(time.time() - t0) * 50:.1f} ms/it",
                  flush=True)
            t0 = time.time()
if rank == 0:
    os.makedirs("out", exist_ok=True)
    torch.save(model.module.state_dict(), "out/classifier.pt")
dist.destroy_process_group()
