"""Tabular regression (delivery time), DDP over gloo under torch.multiprocessing.spawn, 2 processes; every process
prints its own progress every 25 steps."""
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

STEPS = 1000


def run(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(40, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(128, 40, generator=g)
        y = x[:, :5].sum(1, keepdim=True) + 0.1 * torch.randn(128, 1, generator=g)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[r{rank}] step {step:4d}/{STEPS} mse {loss.item():.4f} avg {(time.time() - t0) / 25 * 1000:.1f} ms/step",
                  flush=True)
            t0 = time.time()
    dist.barrier()
    if rank == 0:
        print("done.", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, int(sys.argv[1])), nprocs=2)
