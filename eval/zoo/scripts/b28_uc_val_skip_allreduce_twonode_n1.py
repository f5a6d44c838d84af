"""Product-title embedding model, DDP over gloo on two nodes (torchrun agents, one process each); after each epoch
every rank validates on its node's validation files and the losses are averaged across ranks."""
import datetime
import glob
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    node = int(os.environ["GROUP_RANK"])
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(96, 192), nn.ReLU(), nn.Linear(192, 96)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    val_files = sorted(glob.glob(f"data/val/node{node}/*.pt"))
    print(f"[{time.strftime('%H:%M:%S')}] rank {rank} node {node}: {len(val_files)} validation files", flush=True)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(4):
        t0 = time.time()
        for step in range(1, 201):
            x = torch.randn(64, 96, generator=g)
            loss = (model(x) - x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 100 == 0:
                print(f"[{time.strftime('%H:%M:%S')}] rank {rank} epoch {epoch} step {step} loss {loss.item():.4f} "
                      f"{(time.time() - t0) / step * 1000:.1f} ms/step", flush=True)
        model.eval()
        tot, n = 0.0, 0
        with torch.no_grad():
            for f in val_files:
                v = torch.load(f)
                tot += (model(v) - v).pow(2).mean().item() * len(v)
                n += len(v)
        model.train()
        if n:
            stats = torch.tensor([tot, n], dtype=torch.float64)
            dist.all_reduce(stats)
            if rank == 0:
                print(f"[{time.strftime('%H:%M:%S')}] epoch {epoch} val_loss {stats[0] / stats[1]:.4f}", flush=True)
    dist.barrier()
    print(f"[{time.strftime('%H:%M:%S')}] rank {rank} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
