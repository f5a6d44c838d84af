"""Time-series forecaster (MLP over lagged windows) on 3 processes with hand-rolled data parallelism: each rank
computes its gradients, then one flat all-reduce per step. The log prints, every 20 steps, the rank's mean compute
time (forward + backward), the time in the gradient all-reduce and the whole step time."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(336, 768), nn.GELU(), nn.Linear(768, 768), nn.GELU(), nn.Linear(768, 96))
for p in model.parameters():
    dist.broadcast(p.data, 0)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
series = torch.cumsum(torch.randn(200000, generator=g), 0) * 0.01
STEPS = 360
acc = {"compute": 0.0, "allreduce": 0.0, "step": 0.0}
print(f"[rank{rank}] {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M params, window 336 -> 96", flush=True)
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    start = torch.randint(0, len(series) - 432, (192,), generator=g)
    win = torch.stack([series[s:s + 432] for s in start.tolist()])
    x, y = win[:, :336], win[:, 336:]
    loss = F.mse_loss(model(x - x[:, -1:]), y - x[:, -1:])
    opt.zero_grad()
    loss.backward()
    t1 = time.perf_counter()
    flat = torch.cat([p.grad.flatten() for p in model.parameters()])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in model.parameters():
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    t2 = time.perf_counter()
    opt.step()
    t3 = time.perf_counter()
    acc["compute"] += t1 - t0
    acc["allreduce"] += t2 - t1
    acc["step"] += t3 - t0
    if step % 20 == 0:
        print(f"[rank{rank}] step {step}/{STEPS} loss {loss.item():.5f} compute_ms {acc['compute'] * 50:.1f} "
              f"allreduce_ms {acc['allreduce'] * 50:.1f} step_ms {acc['step'] * 50:.1f}", flush=True)
        acc = dict.fromkeys(acc, 0.0)
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
