"""Speech-command classifier streaming pre-batched feature chunks from the team's object gateway (S3-style HTTP
GETs, BLOB_GATEWAY). Each rank reads its own shard; a DataLoader with 2 persistent workers fetches and decodes
chunks so the workers are not restarted every epoch."""
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
from torch.utils.data import DataLoader, Dataset

GATEWAY = os.environ["BLOB_GATEWAY"]
CHUNKS = 12


class RemoteChunks(Dataset):
    def __init__(self, shard):
        self.shard = shard

    def __len__(self):
        return CHUNKS

    def __getitem__(self, i):
        url = f"{GATEWAY}/speech-commands/train-{self.shard:05d}/chunk-{i:04d}.npz"
        with urllib.request.urlopen(url) as r:
            z = np.load(io.BytesIO(r.read()))
        return torch.from_numpy(z["x"]), torch.from_numpy(z["y"]).long()


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank = dist.get_rank()
loader = DataLoader(RemoteChunks(rank), batch_size=None, shuffle=True, num_workers=2, persistent_workers=True)
model = DDP(nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(), nn.Conv1d(64, 64, 5, padding=2), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 35)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(6):
    t0 = time.time()
    print(f"[rank{rank}] epoch {epoch} start", flush=True)
    for i, (x, y) in enumerate(loader, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 4 == 0:
            print(f"[rank{rank}] epoch {epoch} chunk {i}/{CHUNKS} loss {loss.item():.4f} "
                  f"{(time.time() - t0) * 250:.0f} ms/chunk", flush=True)
            t0 = time.time()
dist.destroy_process_group()
