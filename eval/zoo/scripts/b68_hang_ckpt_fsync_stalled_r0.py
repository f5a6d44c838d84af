"""Image-retrieval embedder on DDP, 3 ranks. Rank 0 writes the checkpoint every 50 steps to the shared checkpoint
volume (/mnt/b68_ckptvol) the safe way (temporary file, fsync, rename); the other ranks wait at a barrier so that
nobody runs ahead of a checkpoint that might be restored."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT = "/mnt/b68_ckptvol/retrieval-r50"
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(256, 640), nn.ReLU(), nn.Linear(640, 640), nn.ReLU(), nn.Linear(640, 128)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
os.makedirs(CKPT, exist_ok=True)


def atomic_save(state, path):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


for step in range(1, 201):
    a = torch.randn(128, 256, generator=g)
    p = a + 0.1 * torch.randn(128, 256, generator=g)
    za, zp = F.normalize(model(a), dim=1), F.normalize(model(p), dim=1)
    loss = F.cross_entropy(za @ zp.t() / 0.1, torch.arange(128))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"{datetime.datetime.now():%H:%M:%S} rank{rank} step {step}/200 loss {loss.item():.4f}", flush=True)
    if step % 50 == 0:
        if rank == 0:
            t0 = time.time()
            print(f"{datetime.datetime.now():%H:%M:%S} rank0 saving checkpoint step {step} -> {CKPT}", flush=True)
            atomic_save({"step": step, "model": model.module.state_dict(), "optim": opt.state_dict()},
                        f"{CKPT}/step{step:05d}.pt")
            print(f"{datetime.datetime.now():%H:%M:%S} rank0 checkpoint step {step} written in "
                  f"{time.time() - t0:.1f}s", flush=True)
        dist.barrier()
print(f"rank{rank} done", flush=True)
dist.destroy_process_group()
