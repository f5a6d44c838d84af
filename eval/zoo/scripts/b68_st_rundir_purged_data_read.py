"""Speech-commands classifier on DDP, 2 ranks. The job script stages the preprocessed feature chunks into the run
directory on the node's scratch (scratch/run-7731/data) before launch; each rank streams its chunks from there
with a DataLoader worker, one chunk file at a time, every epoch."""
import datetime
import glob
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

RUN = "scratch/run-7731"
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)


class Chunks(IterableDataset):
    def __init__(self, files):
        self.files = files

    def __iter__(self):
        for f in self.files:
            z = np.load(f)
            for i in range(0, len(z["y"]), 32):
                yield torch.from_numpy(z["x"][i:i + 32]), torch.from_numpy(z["y"][i:i + 32])


files = sorted(glob.glob(f"{RUN}/data/chunk-*.npz"))[rank::world]
print(f"[rank{rank}] {len(files)} chunks from {RUN}/data", flush=True)
loader = DataLoader(Chunks(files), batch_size=None, num_workers=1)
model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(40 * 32, 256), nn.ReLU(), nn.Linear(256, 12)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
step = 0
for epoch in range(1, 6):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 20 == 0:
            print(f"[rank{rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    print(f"[rank{rank}] epoch {epoch} done ({step} steps)", flush=True)
    if rank == 0:
        os.makedirs(f"{RUN}/ckpt", exist_ok=True)
        torch.save(model.module.state_dict(), f"{RUN}/ckpt/epoch{epoch}.pt")
        print(f"[rank0] saved {RUN}/ckpt/epoch{epoch}.pt", flush=True)
    dist.barrier()
dist.destroy_process_group()
