"""Image-tagging MLP on precomputed embeddings, DDP, 2 ranks, run as a chain of segments (the cluster's wall-clock
limit): each segment resumes from checkpoints/<latest>, trains until --until, saves checkpoints/step_<N>/, updates
checkpoints/latest and keeps the last 2 checkpoints."""
import argparse
import datetime
import os
import shutil

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--until", type=int, required=True)
p.add_argument("--keep", type=int, default=2)
args = p.parse_args()
CK = "checkpoints"
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)


def say(msg):
    print(f"[rank{rank}] {msg}", flush=True)


def save(step):
    if rank == 0:
        d = f"{CK}/step_{step}"
        os.makedirs(d, exist_ok=True)
        torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, f"{d}/state.pt")
        with open(f"{CK}/latest", "w") as f:
            f.write(f"step_{step}\n")
        say(f"saved {d}, latest -> step_{step}")
        ckpts = sorted(d for d in os.listdir(CK) if d.startswith("step_"))
        for old in ckpts[:-args.keep]:
            shutil.rmtree(f"{CK}/{old}")
            say(f"removed old checkpoint {CK}/{old}")
    dist.barrier()


model = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 40))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
step0 = 0
if os.path.exists(f"{CK}/latest"):
    tag = open(f"{CK}/latest").read().strip()
    say(f"resuming from {CK}/{tag}")
    state = torch.load(f"{CK}/{tag}/state.pt", map_location="cpu")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    step0 = state["step"]
model = DDP(model)
g = torch.Generator().manual_seed(step0 * 10 + rank)
for step in range(step0 + 1, args.until + 1):
    x = torch.randn(64, 512, generator=g)
    y = (torch.rand(64, 40, generator=g) < 0.1).float()
    loss = F.binary_cross_entropy_with_logits(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        say(f"step {step}/{args.until} loss {loss.item():.4f}")
    if step % 100 == 0:
        save(step)
say("segment done")
dist.destroy_process_group()
