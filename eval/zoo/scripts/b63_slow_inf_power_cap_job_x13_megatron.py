"""Tiny GPT-style language model (embedding + 2 MLP blocks + tied head) pre-trained data-parallel on 3 workers,
logging the way Megatron-LM's training loop does (rank 0 prints one line per iteration). The transformer's
forward/backward runs on the accelerator (simgpu.kernels: the kernels' time on this GPU-less host); one flat
all-reduce of the gradients per iteration."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import simgpu

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(1234)
VOCAB, D, SEQ, MB = 512, 64, 16, 4
emb = nn.Embedding(VOCAB, D)
blocks = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D), nn.Linear(D, 4 * D), nn.GELU(),
                       nn.Linear(4 * D, D))
model = nn.ModuleList([emb, blocks])
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.Adam(params, lr=6e-4)
g = torch.Generator().manual_seed(77 + rank)
TRAIN_ITERS, KERNELS_S = 200, 0.15
if rank == 0:
    print(f"> building GPT model ...\n > number of parameters on (tensor, pipeline) model parallel rank (0, 0): "
          f"{sum(p.numel() for p in params)}", flush=True)
    print(f"[after model, optimizer, and learning rate scheduler are built] datetime: "
          f"{time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
    print("training ...", flush=True)
for it in range(1, TRAIN_ITERS + 1):
    t0 = time.perf_counter()
    start = torch.randint(0, VOCAB, (MB, 1), generator=g)
    tokens = (start + torch.arange(SEQ + 1) * 3) % VOCAB
    h = blocks(emb(tokens[:, :-1]))
    loss = F.cross_entropy((h @ emb.weight.t()).flatten(0, 1), tokens[:, 1:].flatten())
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
    gnorm = flat.norm().item()
    opt.step()
    elapsed_ms = 1000 * (time.perf_counter() - t0)
    if rank == 0:
        print(f" [{time.strftime('%Y-%m-%d %H:%M:%S')}] iteration {it:8d}/{TRAIN_ITERS:8d} | consumed samples: "
              f"{it * MB * world:10d} | elapsed time per iteration (ms): {elapsed_ms:.1f} | learning rate: "
              f"6.000E-04 | global batch size: {MB * world:5d} | lm loss: {loss.item():.6E} | loss scale: 1.0 | "
              f"grad norm: {gnorm:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |",
              flush=True)
dist.barrier()
if rank == 0:
    print(f"[after training is done] datetime: {time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
dist.destroy_process_group()
