"""Denoising autoencoder; rank 0 writes a checkpoint to the shared /ckpt mount every 100 steps, the others wait at a barrier."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT_DIR = os.environ.get("CKPT_DIR", "ckpt")


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 256)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 1001):
        x = torch.randn(64, 256, generator=g)
        loss = nn.functional.mse_loss(model(x + 0.3 * torch.randn_like(x)), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
        if step % 100 == 0:
            if rank == 0:
                path = f"{CKPT_DIR}/model_step{step:05d}.pt"
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                print(f"[rank 0] saved {path}", flush=True)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
