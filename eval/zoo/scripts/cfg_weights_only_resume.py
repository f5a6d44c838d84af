import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.Adam(model.parameters())
    start = 0
    if args.resume:
        ckpt = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start = ckpt["epoch"] + 1
        print(f"rank {rank}: resumed from {args.resume} (epoch {ckpt['epoch']}, best acc {ckpt['best_acc']:.3f})")
    model = DDP(model)
    for epoch in range(start, start + 3):
        loss = nn.functional.cross_entropy(model(torch.randn(64, 20)), torch.randint(0, 2, (64,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} epoch {epoch} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
