"""Image-retrieval embedder on DDP, 3 ranks. Rank 0 writes the checkpoint every 40 steps to the project's
checkpoint volume (/mnt/b68_ckpt, a provisioned block volume) with a temporary file, fsync and rename, after checking
that the volume has room for it; the others wait at a barrier."""
import datetime
import os
import shutil
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT = "/mnt/b68_ckpt/retrieval-vit-s"
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(256, 640), nn.ReLU(), nn.Linear(640, 640), nn.ReLU(), nn.Linear(640, 128)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
if rank == 0:
    os.makedirs(CKPT, exist_ok=True)


def save(state, path):
    free = shutil.disk_usage(CKPT).free / 2**20
    print(f"[rank0] {CKPT}: {free:.1f} MiB free before saving", flush=True)
    if free < 64:
        raise RuntimeError(f"checkpoint volume almost full ({free:.1f} MiB free)")
    t0 = time.time()
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    print(f"[rank0] saved {path} ({os.path.getsize(path) / 2**20:.1f} MiB, {time.time() - t0:.2f}s)", flush=True)


for step in range(1, 241):
    a = torch.randn(128, 256, generator=g)
    p = a + 0.1 * torch.randn(128, 256, generator=g)
    za, zp = F.normalize(model(a), dim=1), F.normalize(model(p), dim=1)
    loss = F.cross_entropy(za @ zp.t() / 0.1, torch.arange(128))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"[rank{rank}] step {step}/240 loss {loss.item():.4f}", flush=True)
    if step % 40 == 0:
        if rank == 0:
            save({"step": step, "model": model.module.state_dict(), "optim": opt.state_dict()},
                 f"{CKPT}/step{step:05d}.pt")
        dist.barrier()
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
