"""Resumable trainer: checkpoints/step_XXXXXX.pt every 100 steps, checkpoints/latest points at the newest."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT = "checkpoints"


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    model = nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 5))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = 0
    if os.path.islink(f"{CKPT}/latest"):
        path = os.path.join(CKPT, os.readlink(f"{CKPT}/latest"))
        if rank == 0:
            print(f"resuming from {path}")
        state = torch.load(path, map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
    model = DDP(model)
    g = torch.Generator().manual_seed(rank + start)
    for step in range(start + 1, start + 401):
        x = torch.randn(32, 40, generator=g)
        loss = nn.functional.cross_entropy(model(x), x[:, :5].argmax(1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f}")
        if step % 100 == 0 and rank == 0:
            name = f"step_{step:06d}.pt"
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, f"{CKPT}/{name}")
            tmp = f"{CKPT}/latest.tmp"
            os.symlink(name, tmp)
            os.replace(tmp, f"{CKPT}/latest")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
