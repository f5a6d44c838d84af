"""Defect segmentation head trained data-parallel on 4 workers (hand-rolled DDP, one flat gradient all-reduce per
step). The team's gradient-health monitor runs on the last rank (rank 0 already does the logging and the checkpoints):
after HIST_AFTER (the first iterations' gradients are warmup noise), every HIST_EVERY steps, it builds a
per-parameter gradient histogram on the device, copies it to the host and writes it to runs/grad_hist/. Only rank 0
prints, in the format of the team's old mmcv logger. The heavy part of each step runs on the accelerator
(simgpu69.kernels: this host has none, the call takes the kernels' time)."""
import datetime
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu69

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)

MAX_ITERS, BATCH, KERNELS_S, WIRE_S, LR = 200, 8, 0.16, 0.02, 1e-3
HIST_RANK, HIST_EVERY, HIST_AFTER, HIST_KERNELS_S = world - 1, 10, 80, 0.16

model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1))
params = list(model.parameters())
for p in params:
    dist.broadcast(p.data, 0)
opt = torch.optim.SGD(params, lr=LR, momentum=0.9)
g = torch.Generator().manual_seed(100 + rank)
if rank == HIST_RANK:
    os.makedirs("runs/grad_hist", exist_ok=True)


def allreduce_grads():
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    simgpu69.wire(WIRE_S, f"nic{rank}")
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()


if rank == 0:
    print(f"{datetime.datetime.now():%Y-%m-%d %H:%M:%S,%f}"[:-3] + " - defectseg - INFO - workflow: [('train', 1)], "
          f"max: {MAX_ITERS} iters, world_size {world}", flush=True)
t_start = time.time()
for it in range(1, MAX_ITERS + 1):
    t0 = time.time()
    x = torch.randn(BATCH, 3, 32, 32, generator=g)
    y = (x[:, 0] > 0.3).long()
    t1 = time.time()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    simgpu69.kernels(KERNELS_S, f"gpu{rank}")
    if rank == HIST_RANK and it > HIST_AFTER and it % HIST_EVERY == 0:
        hists = {f"p{i}": torch.histc(p.grad, bins=64).numpy() for i, p in enumerate(params)}
        simgpu69.kernels(HIST_KERNELS_S, f"gpu{rank}")  # histograms of the full model on the device + the copy
        np.savez(f"runs/grad_hist/iter_{it:06d}.npz", **hists)
    allreduce_grads()
    opt.step()
    t2 = time.time()
    if rank == 0:
        eta = datetime.timedelta(seconds=int((t2 - t_start) / it * (MAX_ITERS - it)))
        print(f"{datetime.datetime.now():%Y-%m-%d %H:%M:%S,%f}"[:-3] + f" - defectseg - INFO - Iter [{it}/{MAX_ITERS}]"
              f"\tlr: {LR:.3e}, eta: {eta}, time: {t2 - t0:.3f}, data_time: {t1 - t0:.3f}, memory: 812, "
              f"loss: {loss.item():.4f}", flush=True)

dist.barrier()
if rank == 0:
    print(f"{datetime.datetime.now():%Y-%m-%d %H:%M:%S,%f}"[:-3] + f" - defectseg - INFO - Saving checkpoint at "
          f"{MAX_ITERS} iterations", flush=True)
    torch.save(model.state_dict(), "latest.pth")
dist.destroy_process_group()
