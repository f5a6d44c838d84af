"""Dense passage retriever (two MLP encoders over hashed features) with a MoCo-style queue of past passage embeddings as
extra negatives, on DDP across two nodes, 2 processes per node. The queue holds 160k embeddings of 768 floats per rank
and is filled as training goes (2,048 a step)."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
torch.manual_seed(0)
torch.set_num_threads(1)
D, QUEUE, PER_STEP = 768, 160 * 1024, 2048

enc = lambda: nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, D))
model = nn.ModuleDict({"q": enc(), "p": enc()})
for prm in model.parameters():
    dist.broadcast(prm.data, 0)
opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
queue = torch.empty(QUEUE, D)  # filled as training goes
filled = 0
g = torch.Generator().manual_seed(rank)
print(f"[node{node} rank{rank}] negative queue {QUEUE} x {D} ({QUEUE * D * 4 / 2**20:.0f} MiB when full)", flush=True)

STEPS, t0 = 150, time.time()
for step in range(1, STEPS + 1):
    q_in = torch.randn(256, 256, generator=g)
    p_in = torch.cat([q_in, torch.randn(PER_STEP - 256, 256, generator=g)]) + 0.3 * torch.randn(PER_STEP, 256, generator=g)
    q = F.normalize(model["q"](q_in), dim=1)
    p = F.normalize(model["p"](p_in[:256]), dim=1)
    negs = queue[:filled][-4096:]
    logits = torch.cat([q @ p.T, q @ negs.T], dim=1) / 0.05
    loss = F.cross_entropy(logits, torch.arange(256))
    opt.zero_grad()
    loss.backward()
    flat = torch.cat([prm.grad.reshape(-1) for prm in model.parameters()])  # gradients averaged by hand
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for prm in model.parameters():
        prm.grad.copy_(flat[off:off + prm.numel()].view_as(prm))
        off += prm.numel()
    opt.step()
    with torch.no_grad():  # this step's passages (the rest encoded without gradients) go into the queue
        rest = F.normalize(model["p"](p_in[256:]), dim=1)
        n = min(PER_STEP, QUEUE - filled)
        queue[filled:filled + n] = torch.cat([p.detach(), rest])[:n]
        filled += n
    if step % 10 == 0:
        print(f"[node{node} rank{rank}] step {step}/{STEPS} loss {loss.item():.4f} queue {filled}/{QUEUE} "
              f"{(time.time() - t0) / step * 1000:.0f} ms/step", flush=True)
dist.destroy_process_group()
