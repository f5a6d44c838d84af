"""Query-intent classifier (two-layer transformer encoder, small) on 2 nodes x 2 processes; hand-rolled data parallel:
one flat all-reduce of the gradients per step, timed on its own. Every rank prints its own window means every 20 steps."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
node = os.environ.get("GROUP_RANK", "0")
torch.set_num_threads(1)
torch.manual_seed(0)
emb = nn.Embedding(8000, 128)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(128, 4, 256, batch_first=True), 2)
head = nn.Linear(128, 24)
model = nn.ModuleList([emb, enc, head])
params = [p for p in model.parameters()]
for p in params:
    dist.broadcast(p.data, 0)
opt = torch.optim.AdamW(params, lr=3e-4)
g = torch.Generator().manual_seed(rank)
comp, sync, n, t_win = 0.0, 0.0, 0, time.time()
STEPS = 200
for step in range(1, STEPS + 1):
    t0 = time.time()
    ids = torch.randint(0, 8000, (16, 24), generator=g)
    y = ids[:, 0] % 24
    loss = F.cross_entropy(head(enc(emb(ids)).mean(1)), y)
    opt.zero_grad()
    loss.backward()
    t1 = time.time()
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    t2 = time.time()
    opt.step()
    comp += t1 - t0
    sync += t2 - t1
    n += 1
    if step % 20 == 0:
        wall = (time.time() - t_win) / n
        print(f"node {node} rank {rank} | step {step}/{STEPS} | loss {loss.item():.4f} | {wall * 1000:.1f} ms/step | "
              f"compute {comp / n * 1000:.1f} ms | grad sync {sync / n * 1000:.1f} ms", flush=True)
        comp, sync, n, t_win = 0.0, 0.0, 0, time.time()
print(f"node {node} rank {rank} | finished {STEPS} steps", flush=True)
dist.destroy_process_group()
