"""Churn-prediction sequence model (GRU over account events) trained data-parallel on 4 workers (hand-rolled DDP,
one flat gradient all-reduce per step). Every rank writes logfmt lines for the log pipeline. The heavy part of each
step runs on the accelerator (simgpu69.kernels: this host has none, the call takes the kernels' time)."""
import datetime
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

STEPS, BATCH, KERNELS_S, WIRE_S = 200, 16, 0.15, 0.02


class Churn(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(12, 24, batch_first=True)
        self.out = nn.Linear(24, 1)

    def forward(self, x):
        return self.out(self.gru(x)[1][-1]).squeeze(-1)


model = Churn()
params = list(model.parameters())
for p in params:
    dist.broadcast(p.data, 0)
opt = torch.optim.Adam(params, lr=2e-3)
g = torch.Generator().manual_seed(40 + rank)


def ts():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


print(f"ts={ts()} level=info rank={rank} msg=\"start\" world={world} steps={STEPS} batch={BATCH}", flush=True)
for step in range(1, STEPS + 1):
    t0 = time.time()
    x = torch.randn(BATCH, 20, 12, generator=g)
    y = (x[:, -5:, 0].mean(1) > 0).float()
    loss = F.binary_cross_entropy_with_logits(model(x), y)
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
    dt = time.time() - t0
    print(f"ts={ts()} level=info rank={rank} step={step} loss={loss.item():.4f} step_ms={dt * 1000:.1f} "
          f"samples_per_s={BATCH / dt:.1f}", flush=True)

dist.barrier()
print(f"ts={ts()} level=info rank={rank} msg=\"finished\" steps={STEPS}", flush=True)
dist.destroy_process_group()
