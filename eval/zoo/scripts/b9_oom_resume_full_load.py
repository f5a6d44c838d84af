"""Resume a wide MLP from the last full checkpoint: every rank torch.load()s the whole file, then training goes on."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def build():
    return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = build()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    print(f"[rank{rank}] model built: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params", flush=True)
    ckpt = torch.load("checkpoints/last.pt", map_location="cpu")  # model + optimizer moments
    print(f"[rank{rank}] loaded checkpoints/last.pt (step {ckpt['step']})", flush=True)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    start = ckpt["step"]
    model = DDP(model)
    for step in range(start + 1, start + 41):
        x = torch.randn(32, 1024)
        loss = nn.functional.cross_entropy(model(x), torch.randint(0, 10, (32,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
