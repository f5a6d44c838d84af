"""Click-through-rate model (hashed feature embeddings + MLP) on 3 processes with hand-rolled data parallelism: each
rank computes its gradients, then one flat all-reduce averages them. Every rank prints its own phase timings every 20
steps (means over the window, in ms) so the team can see where a step goes."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
FIELDS, HASH, DIM = 16, 20000, 16
model = nn.ModuleDict({
    "emb": nn.EmbeddingBag(HASH, DIM, mode="sum"),
    "mlp": nn.Sequential(nn.Linear(FIELDS * DIM, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)),
})
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
opt = torch.optim.Adagrad(params, lr=0.02)
g = torch.Generator().manual_seed(100 + rank)
STEPS, BATCH, LOG = 300, 1024, 20
acc = {"fwd": 0.0, "bwd": 0.0, "allreduce": 0.0, "opt": 0.0, "step": 0.0}
print(f"[r{rank}] ctr trainer up: world {world}, batch {BATCH}, {sum(p.numel() for p in params):,} params", flush=True)
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    feats = torch.randint(0, HASH, (BATCH * FIELDS, 1), generator=g)
    clicks = (feats.view(BATCH, FIELDS)[:, :3].sum(1) % 7 == 0).float()
    emb = model["emb"](feats).view(BATCH, FIELDS * DIM)
    logit = model["mlp"](emb).squeeze(1)
    loss = F.binary_cross_entropy_with_logits(logit, clicks)
    t1 = time.perf_counter()
    opt.zero_grad()
    loss.backward()
    t2 = time.perf_counter()
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in params:
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    t3 = time.perf_counter()
    opt.step()
    t4 = time.perf_counter()
    for k, v in (("fwd", t1 - t0), ("bwd", t2 - t1), ("allreduce", t3 - t2), ("opt", t4 - t3), ("step", t4 - t0)):
        acc[k] += v
    if step % LOG == 0:
        m = {k: 1000 * v / LOG for k, v in acc.items()}
        print(f"[r{rank}] step {step}/{STEPS} loss {loss.item():.4f} | {m['step']:.1f} ms/step | fwd {m['fwd']:.1f} "
              f"bwd {m['bwd']:.1f} allreduce {m['allreduce']:.1f} opt {m['opt']:.1f}", flush=True)
        acc = dict.fromkeys(acc, 0.0)
dist.barrier()
print(f"[r{rank}] finished {STEPS} steps", flush=True)
dist.destroy_process_group()
