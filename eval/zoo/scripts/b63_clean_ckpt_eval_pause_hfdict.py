"""Support-ticket router (EmbeddingBag + MLP) trained data-parallel on 2 workers with an evaluation pass every 50
steps and a checkpoint every 100. Forward/backward run on the accelerator (simgpu.kernels: the kernels' time on this
GPU-less host); one flat all-reduce per step. Rank 0 prints Trainer-style dicts and the checkpoint lines."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.EmbeddingBag(4000, 48), nn.Linear(48, 64), nn.ReLU(), nn.Linear(64, 8))
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.AdamW(params, lr=2e-3)
g = torch.Generator().manual_seed(60 + rank)
STEPS, BATCH, KERNELS_S, EVAL_EVERY, SAVE_EVERY, EVAL_BATCHES = 200, 64, 0.15, 50, 100, 6


def batch(gen):
    t = torch.randint(0, 4000, (BATCH, 24), generator=gen)
    return t, (t[:, 0] % 8)


@torch.no_grad()
def evaluate():
    gen, tot = torch.Generator().manual_seed(5 + rank), 0.0
    for _ in range(EVAL_BATCHES):
        t, y = batch(gen)
        tot += F.cross_entropy(model(t), y).item()
        simgpu.kernels(KERNELS_S / 2, f"gpu{rank}")  # forward only
    v = torch.tensor([tot / EVAL_BATCHES])
    dist.all_reduce(v)
    return v.item() / world


t_start = time.perf_counter()
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    t, y = batch(g)
    loss = F.cross_entropy(model(t), y)
    opt.zero_grad()
    loss.backward()
    simgpu.kernels(KERNELS_S, f"gpu{rank}")
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    opt.step()
    if rank == 0:
        print({"loss": round(loss.item(), 4), "learning_rate": 0.002, "epoch": round(step / STEPS, 3), "step": step,
               "step_time": round(time.perf_counter() - t0, 4)}, flush=True)
    if step % EVAL_EVERY == 0:
        e0 = time.perf_counter()
        ev = evaluate()
        if rank == 0:
            rt = time.perf_counter() - e0
            print({"eval_loss": round(ev, 4), "eval_runtime": round(rt, 3),
                   "eval_samples_per_second": round(EVAL_BATCHES * BATCH * world / rt, 1), "epoch": round(step / STEPS, 3),
                   "step": step}, flush=True)
    if step % SAVE_EVERY == 0:
        if rank == 0:
            out = f"out/ticket-router/checkpoint-{step}"
            os.makedirs(out, exist_ok=True)
            s0 = time.perf_counter()
            torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step}, f"{out}/state.pt")
            simgpu.kernels(0.8, f"gpu{rank}")  # device-to-host copy of the full-size model's weights and moments
            print(f"Saving model checkpoint to {out} ({time.perf_counter() - s0:.2f}s)", flush=True)
        dist.barrier()
dist.barrier()
if rank == 0:
    rt = time.perf_counter() - t_start
    print({"train_runtime": round(rt, 2), "train_steps_per_second": round(STEPS / rt, 3),
           "epoch": 1.0}, flush=True)
dist.destroy_process_group()
