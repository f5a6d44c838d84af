"""Audio-event tagger (an MLP over precomputed log-mel summaries) on DDP, 4 ranks. Each rank reads its shard through
the index written by the data team: a sample is read from the node-local cache when the index marks it cached, else
from the shared feature store through the store client, which keeps to the store's per-client request budget. Every
rank prints one line of its own timing every 20 steps (seconds per step, split into data wait and compute)."""
import datetime
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)


class StoreClient:
    """Client of the shared feature store: at most `rps` requests per second per client (the store's budget)."""

    def __init__(self, root, rps=3000):
        self.root, self.interval, self.next_slot = root, 1.0 / rps, 0.0

    def get(self, name, i):
        now = time.monotonic()
        if now < self.next_slot:
            time.sleep(self.next_slot - now)
        self.next_slot = max(now, self.next_slot) + self.interval
        return np.load(os.path.join(self.root, name), mmap_mode="r")[i]


class MelShard(Dataset):
    def __init__(self, rank):
        meta = json.load(open(f"index/shard-{rank:02d}.json"))
        self.name, self.cached = meta["file"], meta["cached_upto"]
        self.labels = np.load(os.path.join("cache", meta["labels"]))
        self.local = np.load(os.path.join("cache", self.name), mmap_mode="r") if self.cached else None
        self.store = StoreClient("store")

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.local[i] if i < self.cached else self.store.get(self.name, i)
        return torch.from_numpy(np.array(x)), int(self.labels[i])


ds = MelShard(rank)
loader = DataLoader(ds, batch_size=64, num_workers=1, prefetch_factor=2)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
print(f"rank {rank}/{world}: {len(ds)} clips in shard, {ds.cached} in the local cache", flush=True)
data_t = comp_t = 0.0
step, t_last = 0, time.perf_counter()
for xb, yb in loader:
    t0 = time.perf_counter()
    data_t += t0 - t_last
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    t_last = time.perf_counter()
    comp_t += t_last - t0
    step += 1
    if step % 20 == 0:
        print(f"rank {rank} | step {step:4d} | loss {loss.item():.3f} | time/step {(data_t + comp_t) / 20:.3f}s | "
              f"data {data_t / 20:.3f}s | compute {comp_t / 20:.3f}s", flush=True)
        data_t = comp_t = 0.0
dist.barrier()
print(f"rank {rank}: epoch done ({step} steps)", flush=True)
dist.destroy_process_group()
