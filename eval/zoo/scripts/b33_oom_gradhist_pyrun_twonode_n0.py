"""Click-through model (wide embedding + MLP) trained with a hand-written gradient sync: the flattened gradient is
all-reduced every step; each process keeps the last gradients to estimate the gradient noise scale at the end of
the epoch. Plain prints."""
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[{os.uname().nodename}] rank {rank} of {world} started", flush=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(50000, 48), nn.Flatten(), nn.Linear(48 * 8, 512), nn.ReLU(), nn.Linear(512, 1))
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    print(f"rank {rank}: {n} parameters, grad sync {n * 4 / 2**20:.1f} MiB per step", flush=True)
    opt = torch.optim.SGD(params, lr=0.05)
    g = torch.Generator().manual_seed(rank)
    grad_hist = []  # for the gradient noise scale at the end of the epoch
    t0 = time.time()
    for step in range(1, 301):
        x = torch.randint(0, 50000, (256, 8), generator=g)
        y = (x[:, 0] % 7 == 0).float()
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        grad_hist.append(flat.clone())
        dist.all_reduce(flat)
        flat /= world
        off = 0
        for p in params:
            p.grad.copy_(flat[off:off + p.numel()].view_as(p))
            off += p.numel()
        opt.step()
        if step % 20 == 0:
            print(f"rank {rank} step {step}/300 loss {loss.item():.4f} {(time.time() - t0) / step * 1000:.0f} ms/step",
                  flush=True)
    g_all = torch.stack(grad_hist)
    print(f"rank {rank}: gradient noise scale {(g_all.var(0).sum() / g_all.mean(0).pow(2).sum()).item():.2f}")
    dist.destroy_process_group()
    sys.exit(0)


if __name__ == "__main__":
    main()
