"""Sequential recommender (SASRec-style) on user click histories, DDP with 3 ranks. Each rank reads its own
partition of the history table (Parquet, one file per partition) with pyarrow, keeps the last 50 items per user
and trains on them."""
import datetime
import os
import time

import numpy as np
import pyarrow.parquet as pq
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

ITEMS, L, D = 20000, 50, 64

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
path = f"data/histories/part-{rank:05d}.parquet"
print(f"[rank{rank}] reading {path} ({os.path.getsize(path) >> 20} MiB)", flush=True)
t = time.time()
table = pq.read_table(path, columns=["user_id", "items", "ts"])
df = table.to_pandas()
hist = np.stack([np.asarray(v[-L:], dtype=np.int64) for v in df["items"] if len(v) >= L])
print(f"[rank{rank}] {len(df)} users, {len(hist)} with >= {L} clicks ({time.time() - t:.1f}s)", flush=True)
del df, table


class SASRec(nn.Module):
    def __init__(self):
        super().__init__()
        self.item = nn.Embedding(ITEMS, D)
        self.pos = nn.Parameter(torch.zeros(L - 1, D))
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 2, 2 * D, batch_first=True), 2)

    def forward(self, seq):
        h = self.enc(self.item(seq) + self.pos)
        return h @ self.item.weight.T


model = DDP(SASRec())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
seqs = torch.from_numpy(hist)
g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in range(1, 301):
    b = seqs[torch.randint(0, len(seqs), (32,), generator=g)]
    logits = model(b[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, ITEMS), b[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"[rank{rank}] step {step}/300 loss {loss.item():.4f} {(time.time() - t0) * 40:.0f} ms/step", flush=True)
        t0 = time.time()
dist.destroy_process_group()
