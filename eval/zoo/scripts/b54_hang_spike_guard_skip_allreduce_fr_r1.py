"""Sensor regression (MLP) on 3 ranks with a hand-written data-parallel step: each rank computes its gradients, the
gradients are flattened and summed with one all_reduce, and every step starts with rank 0's stop flag (a STOP file
an operator can touch) broadcast to everyone. A gradient-spike guard skips the update when the local gradient norm
is far above its running average. PyTorch's Flight Recorder is on (TORCH_FR_BUFFER_SIZE); a rank writes its trace
to fr/ when a collective fails."""
import datetime
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)

shard = torch.load(f"data/sensors-{rank}.pt")
X, Y = shard["x"], shard["y"]
print(f"[rank {rank}] shard data/sensors-{rank}.pt: {len(X)} rows", flush=True)
model = nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1))
for p in model.parameters():  # same start on every rank
    dist.broadcast(p.data, 0)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
BATCH, STEPS, SPIKE = 64, 300, 25.0
avg_norm = None


def write_fr_trace():
    os.makedirs("fr", exist_ok=True)
    with open(f"fr/fr_trace_rank{rank}.pkl", "wb") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace())
    print(f"[rank {rank}] flight recorder trace -> fr/fr_trace_rank{rank}.pkl", flush=True)


try:
    for step in range(1, STEPS + 1):
        stop = torch.tensor([1.0 if (rank == 0 and os.path.exists("STOP")) else 0.0])
        dist.broadcast(stop, 0)
        if stop.item():
            print(f"[rank {rank}] stop requested at step {step}", flush=True)
            break
        lo = ((step - 1) * BATCH) % len(X)
        x, y = X[lo:lo + BATCH], Y[lo:lo + BATCH]
        loss = F.mse_loss(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        gnorm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters()))
        if avg_norm is not None and gnorm > SPIKE * avg_norm:
            print(f"[rank {rank}] step {step}: grad norm {gnorm:.1f} > {SPIKE:.0f}x running avg {avg_norm:.2f}, "
                  f"skipping this update", flush=True)
            continue
        avg_norm = gnorm if avg_norm is None else 0.95 * avg_norm + 0.05 * gnorm
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        dist.all_reduce(flat)
        flat /= world
        off = 0
        for p in model.parameters():
            p.grad.copy_(flat[off:off + p.numel()].view_as(p))
            off += p.numel()
        opt.step()
        if step % 20 == 0:
            print(f"[rank {rank}] step {step}/{STEPS} loss {loss.item():.4f} grad_norm {gnorm:.3f}", flush=True)
except Exception:
    write_fr_trace()
    raise
print(f"[rank {rank}] done", flush=True)
dist.destroy_process_group()
