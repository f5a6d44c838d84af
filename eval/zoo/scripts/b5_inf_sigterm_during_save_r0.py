"""Regression model on tabular features; checkpoints every 100 steps, resumes from the newest one."""
import argparse
import glob
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def newest_checkpoint(d):
    files = sorted(glob.glob(os.path.join(d, "step_*.pt")))
    return files[-1] if files else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt-dir", default="checkpoints")
    ap.add_argument("--steps", type=int, default=400)
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(256, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                              nn.Linear(2048, 1)))
    opt = torch.optim.Adam(model.parameters(), 1e-4)
    start = 0
    last = newest_checkpoint(args.ckpt_dir)
    if last:
        state = torch.load(last, map_location="cpu")
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
        print(f"[rank {rank}] resumed from {last} (step {start})", flush=True)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(start + 1, args.steps + 1):
        x = torch.randn(32, 256, generator=g)
        loss = nn.functional.mse_loss(model(x), x[:, :16].mean(1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 20 == 0:
            print(f"step {step} loss {loss.item():.5f} ({(time.time() - t0) / 20 * 1000:.0f} ms/step)", flush=True)
            t0 = time.time()
        if step % 100 == 0:
            if rank == 0:
                os.makedirs(args.ckpt_dir, exist_ok=True)
                path = os.path.join(args.ckpt_dir, f"step_{step:06d}.pt")
                print(f"saving checkpoint {path}", flush=True)
                torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, path)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
