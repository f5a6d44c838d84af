"""Image-patch autoencoder on DDP, 3 ranks. The model is built on every rank, so the start-up broadcast of DDP is
switched off (init_sync=False) to save start-up time on the big configuration. Before each checkpoint the job checks
that the replicas still agree (a checksum of the parameters, gathered from every rank)."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)

enc = nn.Sequential(nn.Linear(192, 256), nn.GELU(), nn.Linear(256, 32))
dec = nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.Linear(256, 192))
model = DDP(nn.Sequential(enc, dec), init_sync=False)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(1000 + rank)  # each rank its own patches


def replica_checksums():
    with torch.no_grad():
        s = torch.stack([p.double().sum() for p in model.parameters()]).sum().reshape(1)
    out = [torch.zeros(1, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(out, s)
    return [float(t) for t in out]


for step in range(1, 201):
    x = torch.rand(128, 192, generator=g)
    loss = nn.functional.mse_loss(model(x), x)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"[rank{rank}] step {step} loss {loss.item():.5f}", flush=True)
    if step % 100 == 0:
        sums = replica_checksums()
        if max(sums) - min(sums) > 1e-6 * max(1.0, abs(sums[0])):
            raise RuntimeError(f"model replicas are out of sync at step {step}: parameter checksums per rank {sums}")
        if rank == 0:
            os.makedirs("ckpt", exist_ok=True)
            torch.save(model.module.state_dict(), f"ckpt/ae-{step}.pt")
            print(f"[rank0] saved ckpt/ae-{step}.pt", flush=True)
dist.destroy_process_group()
