"""Query-rewrite model (embedding + 2-layer MLP) trained data-parallel on 3 workers. The model's forward/backward runs
on the accelerator (simgpu.kernels: the kernels' time on this GPU-less host); one flat all-reduce of the gradients per
step. Every rank logs each step in logfmt. While chasing a NaN last week the team added an activation dump on the last
rank (its shard holds the long queries), every 5 steps; the flag was left on in the job's config."""
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
CFG = {"steps": 200, "batch": 64, "dump_activations_every": 5, "dump_from_step": 80, "dump_dir": "debug/acts"}
VOCAB = 3000
emb = nn.EmbeddingBag(VOCAB, 32)
mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
model = nn.ModuleList([emb, mlp])
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.Adam(params, lr=1e-3)
g = torch.Generator().manual_seed(90 + rank)
KERNELS_S = 0.15
dump_rank = world - 1
if rank == dump_rank:
    os.makedirs(CFG["dump_dir"], exist_ok=True)


def log(**kv):
    print(" ".join([f"ts={time.strftime('%Y-%m-%dT%H:%M:%S')}", f"rank={rank}"] + [f"{k}={v}" for k, v in kv.items()]),
          flush=True)


log(msg="start", world=world, steps=CFG["steps"], batch=CFG["batch"])
for step in range(1, CFG["steps"] + 1):
    t0 = time.perf_counter()
    q = torch.randint(0, VOCAB, (CFG["batch"], 12), generator=g)
    h = mlp(emb(q))
    target = emb(q.flip(1)).detach()
    loss = F.mse_loss(h, target)
    opt.zero_grad()
    loss.backward()
    simgpu.kernels(KERNELS_S, f"gpu{rank}")
    if rank == dump_rank and step >= CFG["dump_from_step"] and step % CFG["dump_activations_every"] == 0:
        simgpu.kernels(KERNELS_S, f"gpu{rank}")  # device-to-host copy of every layer's activations (full-size model)
        torch.save({"step": step, "h": h.detach()}, f"{CFG['dump_dir']}/step{step:06d}.pt")
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    opt.step()
    log(step=step, loss=f"{loss.item():.5f}", step_s=f"{time.perf_counter() - t0:.3f}")
dist.barrier()
log(msg="done")
dist.destroy_process_group()
