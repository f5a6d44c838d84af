"""Query-intent classifier trained data-parallel on 2 workers (hand-rolled DDP, one flat gradient all-reduce per
step), with a validation pass every 50 iterations and a checkpoint every 100, logged on rank 0 in the style of the
team's mmengine runner. The heavy part of each step runs on the accelerator (simgpu69.kernels)."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu69

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)

MAX_ITERS, BATCH, KERNELS_S, WIRE_S, VAL_EVERY, CKPT_EVERY, VAL_BATCHES = 200, 32, 0.18, 0.02, 50, 100, 8
model = nn.Sequential(nn.EmbeddingBag(4000, 32), nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 6))
params = list(model.parameters())
for p in params:
    dist.broadcast(p.data, 0)
opt = torch.optim.AdamW(params, lr=1e-3)
g = torch.Generator().manual_seed(500 + rank)


def info(msg):
    if rank == 0:
        print(f"{datetime.datetime.now():%m/%d %H:%M:%S} - mmengine - INFO - {msg}", flush=True)


def batch():
    ids = torch.randint(0, 4000, (BATCH, 12), generator=g)
    return ids, ids[:, 0] % 6


def validate(it):
    t0 = time.time()
    correct = torch.zeros(2)
    with torch.no_grad():
        for _ in range(VAL_BATCHES):
            ids, y = batch()
            correct += torch.tensor([(model(ids).argmax(-1) == y).sum().item(), len(y)], dtype=torch.float)
            simgpu69.kernels(0.05, f"gpu{rank}")
    dist.all_reduce(correct)
    info(f"Iter(val) [{VAL_BATCHES}/{VAL_BATCHES}]    accuracy/top1: {100 * correct[0] / correct[1]:.4f}  "
         f"data_time: 0.0003  time: {(time.time() - t0) / VAL_BATCHES:.4f}")


info(f"Distributed training is enabled, world size {world}")
info(f"Checkpoints will be saved to {os.getcwd()}/work_dirs/intent_cls.")
for it in range(1, MAX_ITERS + 1):
    t0 = time.time()
    ids, y = batch()
    t1 = time.time()
    loss = F.cross_entropy(model(ids), y)
    opt.zero_grad()
    loss.backward()
    simgpu69.kernels(KERNELS_S, f"gpu{rank}")
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    simgpu69.wire(WIRE_S, f"nic{rank}")
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    opt.step()
    t2 = time.time()
    eta = datetime.timedelta(seconds=int((t2 - t0) * (MAX_ITERS - it)))
    info(f"Iter(train) [{it:>3}/{MAX_ITERS}]  lr: 1.0000e-03  eta: {eta}  time: {t2 - t0:.4f}  "
         f"data_time: {t1 - t0:.4f}  memory: 1024  loss: {loss.item():.4f}")
    if it % CKPT_EVERY == 0:
        info(f"Saving checkpoint at {it} iterations")
        if rank == 0:
            os.makedirs("work_dirs/intent_cls", exist_ok=True)
            torch.save({"state_dict": model.state_dict(), "optimizer": opt.state_dict(), "iter": it},
                       f"work_dirs/intent_cls/iter_{it}.pth")
            simgpu69.kernels(0.6, "gpu0")  # device-to-host copy of the full-size weights
        dist.barrier()
    if it % VAL_EVERY == 0:
        validate(it)

dist.barrier()
info("Training finished.")
dist.destroy_process_group()
