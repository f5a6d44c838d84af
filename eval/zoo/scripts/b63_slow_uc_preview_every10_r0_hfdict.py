"""Small image-caption decoder trained data-parallel on 3 workers; the decoder's forward/backward runs on the
accelerator (simgpu.kernels: the kernels' time on this GPU-less host), gradients averaged with one all-reduce per
step. Rank 0 prints a Trainer-style dict per step and, so the team can eyeball progress, decodes a preview batch
every 10 steps once warmup is over, before it joins the step's all-reduce."""
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
torch.manual_seed(0)
VOCAB, DIM = 1000, 48
model = nn.ModuleDict({"img": nn.Linear(64, DIM), "tok": nn.Embedding(VOCAB, DIM), "out": nn.Linear(DIM, VOCAB)})
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.AdamW(params, lr=1e-3)
g = torch.Generator().manual_seed(31 + rank)
STEPS, BATCH, KERNELS_S, PREVIEW_EVERY, WARMUP_STEPS = 200, 32, 0.15, 10, 100
preview_img = torch.randn(8, 64, generator=torch.Generator().manual_seed(99))


@torch.no_grad()
def preview_captions(n_tokens=12):
    """Greedy-decode the fixed preview images (the caption decoder, token by token)."""
    h = model["img"](preview_img)
    toks = []
    for _ in range(n_tokens):
        nxt = model["out"](h).argmax(-1)
        toks.append(nxt)
        h = h + model["tok"](nxt)
    simgpu.kernels(KERNELS_S, f"gpu{rank}")  # 12 decoder passes over the preview batch on the device
    return torch.stack(toks, 1)


t_start = time.perf_counter()
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    img = torch.randn(BATCH, 64, generator=g)
    cap = (img[:, :16].argmax(1, keepdim=True) * 7 + torch.arange(10)) % VOCAB
    h = model["img"](img).unsqueeze(1) + model["tok"](cap)
    loss = F.cross_entropy(model["out"](h).flatten(0, 1), cap.roll(-1, 1).flatten())
    opt.zero_grad()
    loss.backward()
    simgpu.kernels(KERNELS_S, f"gpu{rank}")
    if rank == 0 and step > WARMUP_STEPS and step % PREVIEW_EVERY == 0:  # captions are noise during warmup
        preview = preview_captions()
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    gn = flat.norm().item()
    opt.step()
    dt = time.perf_counter() - t0
    if rank == 0:
        print({"loss": round(loss.item(), 4), "grad_norm": round(gn, 4), "learning_rate": 1e-3,
               "epoch": round(step / STEPS, 3), "step": step, "step_time": round(dt, 4)}, flush=True)

dist.barrier()
if rank == 0:
    print({"train_runtime": round(time.perf_counter() - t_start, 2), "train_steps": STEPS,
           "train_steps_per_second": round(STEPS / (time.perf_counter() - t_start), 3)}, flush=True)
dist.destroy_process_group()
