"""Bird-call tagger (a small MLP over log-mel patches) on DDP, 3 ranks. The training set is a webdataset-style
collection of tar shards (one sample = <key>.npy features + <key>.cls label), streamed member by member; each rank
takes shards[rank::world] and each DataLoader worker one of the rank's shards."""
import datetime
import glob
import io
import os
import tarfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class TarShards(IterableDataset):
    def __init__(self, urls):
        self.urls = urls

    def samples(self, url):
        cur_key, cur = None, {}
        with tarfile.open(url, mode="r|") as tar:
            for member in tar:
                key, ext = member.name.rsplit(".", 1)
                if key != cur_key and cur:
                    yield cur
                    cur = {}
                cur_key = key
                cur[ext] = tar.extractfile(member).read()
        if cur:
            yield cur

    def __iter__(self):
        info = get_worker_info()
        urls = self.urls[info.id::info.num_workers] if info else self.urls
        for url in urls:
            for s in self.samples(url):
                x = np.load(io.BytesIO(s["npy"]))
                yield torch.from_numpy(x).flatten(), int(s["cls"])


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
shards = sorted(glob.glob("shards/birds-train-*.tar"))
mine = shards[rank::world]
print(f"[rank {rank}] shards: {' '.join(os.path.basename(s) for s in mine)}", flush=True)
loader = DataLoader(TarShards(mine), batch_size=32, num_workers=2)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(40 * 24, 256), nn.ReLU(), nn.Linear(256, 20)))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
t0 = time.time()
for epoch in range(3):
    for step, (x, y) in enumerate(loader, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
dist.barrier()
if rank == 0:
    torch.save(model.module.state_dict(), "tagger.pt")
print(f"[rank {rank}] finished", flush=True)
dist.destroy_process_group()
