"""Image-embedding classifier, DDP with 2 ranks. Each rank streams its own shard of pre-batched feature chunks from
the team's object gateway over HTTP, through a DataLoader with 2 workers; the step log shows how long the step
waited for data (data_ms)."""
import datetime
import io
import os
import time
import urllib.request

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

GATEWAY = os.environ["BLOB_GATEWAY"]
STEPS = 360


class Chunks(IterableDataset):
    def __init__(self, shard, n):
        self.shard, self.n = shard, n

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        for i in range(info.id, self.n, info.num_workers):
            with urllib.request.urlopen(f"{GATEWAY}/products-emb/{self.shard}/batch-{i % 40:05d}.npz") as r:
                z = np.load(io.BytesIO(r.read()))
            yield torch.from_numpy(z["x"]), torch.from_numpy(z["y"])


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
loader = DataLoader(Chunks(f"train-{rank:05d}", STEPS), batch_size=None, num_workers=2, prefetch_factor=2)
model = DDP(nn.Sequential(nn.Linear(768, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 500)))
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
print(f"[rank{rank}] streaming train-{rank:05d} from {GATEWAY}", flush=True)
step_ms = data_ms = 0.0
t_end = time.time()
for step, (x, y) in enumerate(loader, 1):
    t_data = time.time()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    now = time.time()
    data_ms += (t_data - t_end) * 1000
    step_ms += (now - t_end) * 1000
    t_end = now
    if step % 20 == 0:
        print(f"[rank{rank}] step {step}/{STEPS} loss {loss.item():.4f} step_ms {step_ms / 20:.1f} "
              f"data_ms {data_ms / 20:.1f}", flush=True)
        step_ms = data_ms = 0.0
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
