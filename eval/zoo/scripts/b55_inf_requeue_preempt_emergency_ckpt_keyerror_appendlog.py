"""Keyword-spotting model (small 1-D conv net over log-mel frames) with DDP on 2 ranks, run from a Slurm batch script
(job.sh) with --requeue and --open-mode=append: a preempted job is requeued and its output appended to the same log.
Rank 0 checkpoints every 50 steps; on SIGTERM (preemption) every rank stops and rank 0 saves an emergency checkpoint so
that the requeued run loses as little as possible. Every run resumes from ckpt/last.pt."""
import datetime
import os
import signal
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 200
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
net = nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(), nn.Conv1d(64, 64, 5, padding=2), nn.ReLU(),
                    nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12))
model = DDP(net)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
step = 0


def on_sigterm(signum, frame):
    print(f"rank {rank}: SIGTERM at step {step}, saving emergency checkpoint", flush=True)
    if rank == 0:
        torch.save({"model": net.state_dict(), "step": step}, "ckpt/last.pt")
        print(f"rank 0: emergency checkpoint step {step} -> ckpt/last.pt", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, on_sigterm)
os.makedirs("ckpt", exist_ok=True)
start = 0
if os.path.exists("ckpt/last.pt"):
    state = torch.load("ckpt/last.pt")
    net.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
    print(f"rank {rank}: resumed from ckpt/last.pt at step {start}", flush=True)
g = torch.Generator().manual_seed(rank)
for step in range(start + 1, STEPS + 1):
    y = torch.randint(0, 12, (64,), generator=g)
    x = torch.randn(64, 40, 98, generator=g)
    x[torch.arange(64), y * 3] += 2.0
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step}/{STEPS} loss {loss.item():.4f}", flush=True)
    if step % 50 == 0 and rank == 0:
        torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "step": step}, "ckpt/last.pt")
        print(f"rank 0: checkpoint step {step} -> ckpt/last.pt", flush=True)
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()
