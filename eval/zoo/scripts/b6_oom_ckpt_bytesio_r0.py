"""Autoencoder pre-training; rank 0 checkpoints into memory and uploads the bytes to the object store."""
import datetime
import io
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

SAVE_EVERY = 25
BUCKET_DIR = os.environ.get("CKPT_BUCKET", "bucket/ae-pretrain")


def upload(data: bytes, key: str) -> None:
    # stand-in for the object store client (s3.put_object(Body=data, ...))
    os.makedirs(BUCKET_DIR, exist_ok=True)
    with open(os.path.join(BUCKET_DIR, key), "wb") as f:
        f.write(data)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 1024))
    n_params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(f"model params: {n_params / 1e6:.1f}M, world size {world}")
    model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 101):
        x = torch.randn(32, 1024, generator=g)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f} {(time.time() - t0) / 5:.2f}s/step")
            t0 = time.time()
        if step % SAVE_EVERY == 0:
            if rank == 0:
                state = {
                    "step": step,
                    "model": {k: v.detach().clone() for k, v in model.module.state_dict().items()},
                    "optimizer": opt.state_dict(),
                }
                buf = io.BytesIO()
                torch.save(state, buf)
                upload(buf.getvalue(), f"step_{step:06d}.pt")
                print(f"checkpoint step {step} uploaded ({buf.tell() / 2**20:.0f} MiB)")
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
