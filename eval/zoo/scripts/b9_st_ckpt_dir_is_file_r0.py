"""Tabular regressor; rank 0 writes an epoch checkpoint under checkpoints/<run-name>/."""
import argparse
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt-root", default="checkpoints")
    p.add_argument("--run-name", default="tab-reg-v3")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps-per-epoch", type=int, default=80)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(100 + rank)
    for epoch in range(args.epochs):
        for step in range(1, args.steps_per_epoch + 1):
            x = torch.randn(64, 32, generator=g)
            y = x[:, :4].sum(1, keepdim=True)
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"[rank{rank}] epoch {epoch} step {step}/{args.steps_per_epoch} loss {loss.item():.4f}")
        if rank == 0:
            out = os.path.join(args.ckpt_root, args.run_name)
            os.makedirs(out, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "epoch": epoch},
                       os.path.join(out, f"epoch{epoch}.pt"))
            print(f"[rank0] saved {out}/epoch{epoch}.pt")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
