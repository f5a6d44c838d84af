"""Denoising autoencoder on two processes (torch.multiprocessing.spawn); rank 0 writes checkpoints atomically."""
import datetime
import os
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT_DIR = "checkpoints"


def save_atomic(obj, path):
    """Write to a temporary file first, then rename it into place, so a reader never sees a partial checkpoint."""
    fd, tmp = tempfile.mkstemp(suffix=".pt")
    os.close(fd)
    torch.save(obj, tmp)
    os.rename(tmp, path)


def run(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=20))
    model = DDP(nn.Sequential(nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 256)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 401):
        x = torch.randn(64, 256, generator=g)
        loss = nn.functional.mse_loss(model(x + 0.1 * torch.randn_like(x)), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0 and rank == 0:
            print(f"step {step}/400 loss {loss.item():.4f} ({(time.time() - t0) / 25 * 1000:.1f} ms/step)")
            t0 = time.time()
        if step % 100 == 0:
            if rank == 0:
                path = os.path.join(CKPT_DIR, f"dae_step{step:05d}.pt")
                save_atomic({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                print(f"saved {path}")
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(os.environ.get("PORT", "29500"))
    os.makedirs(CKPT_DIR, exist_ok=True)
    mp.spawn(run, args=(2, port), nprocs=2)
