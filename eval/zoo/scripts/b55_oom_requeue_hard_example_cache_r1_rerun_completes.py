"""Speech-command classifier (MLP over flattened log-mel patches) with DDP on 2 ranks, run from a Slurm batch script
with --requeue and --open-mode=append (a failed job is requeued, its output appended to the same log). Every rank keeps
its hard examples (the inputs of its highest-loss samples of every step) for a replay pass at the end, and rank 0
checkpoints every 40 steps; a requeued run resumes from ckpt/last.pt."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 160
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(40 * 100, 256), nn.ReLU(), nn.Linear(256, 35))
model = DDP(net)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
start = 0
if os.path.exists("ckpt/last.pt"):
    state = torch.load("ckpt/last.pt")
    net.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
    print(f"rank {rank}: resumed at step {start}", flush=True)
hard = []  # (input, label) of this rank's hardest samples, replayed after the last step
g = torch.Generator().manual_seed(rank * 1000 + start)
for step in range(start + 1, STEPS + 1):
    y = torch.randint(0, 35, (128,), generator=g)
    x = torch.randn(128, 40 * 100, generator=g)
    x[torch.arange(128), y * 100] += 3.0
    losses = F.cross_entropy(model(x), y, reduction="none")
    loss = losses.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    top = losses.detach().topk(96).indices
    hard.append((x[top].clone(), y[top].clone()))
    if step % 10 == 0:
        mb = sum(t.numel() * t.element_size() for t, _ in hard) / 2**20
        print(f"rank {rank} step {step}/{STEPS} loss {loss.item():.4f} hard_examples {len(hard) * 96} ({mb:.0f} MiB)",
              flush=True)
    if step % 40 == 0 and rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "step": step}, "ckpt/tmp.pt")
        os.replace("ckpt/tmp.pt", "ckpt/last.pt")
        print(f"rank 0: checkpoint step {step}", flush=True)
xs, ys = torch.cat([h[0] for h in hard]), torch.cat([h[1] for h in hard])
replay = F.cross_entropy(model(xs[:1024]), ys[:1024])
print(f"rank {rank}: replay loss on {len(ys)} hard examples {replay.item():.4f}; done", flush=True)
dist.destroy_process_group()
