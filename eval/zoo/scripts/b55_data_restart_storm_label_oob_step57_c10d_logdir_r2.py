"""Land-cover classifier (MLP over per-pixel spectral features) on DDP, 3 ranks, torchrun --max-restarts 3 with a
--log-dir. Each rank reads its own shard data/shard-<R>.pt (features, labels, 10 classes) in a fixed order; rank 0
checkpoints every 20 steps (written to a temporary file and renamed) and every rank resumes from ckpt/last.pt."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

NUM_CLASSES, BATCH, STEPS = 10, 32, 100
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
shard = torch.load(f"data/shard-{rank}.pt")
x_all, y_all = shard["x"], shard["y"]
model = DDP(nn.Sequential(nn.Linear(13, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, NUM_CLASSES)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
start = 0
if os.path.exists("ckpt/last.pt"):
    state = torch.load("ckpt/last.pt")
    model.module.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
    print(f"rank {rank}: resumed from ckpt/last.pt at step {start}", flush=True)
print(f"rank {rank}: {len(y_all)} samples, starting at step {start + 1}", flush=True)
for step in range(start + 1, STEPS + 1):
    i = (step - 1) * BATCH % len(y_all)
    x, y = x_all[i:i + BATCH], y_all[i:i + BATCH]
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank}: step {step}/{STEPS} loss {loss.item():.4f}", flush=True)
    if step % 20 == 0 and rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, "ckpt/tmp.pt")
        os.replace("ckpt/tmp.pt", "ckpt/last.pt")
        print(f"rank 0: checkpoint step {step} -> ckpt/last.pt", flush=True)
print(f"rank {rank}: finished {STEPS} steps", flush=True)
dist.destroy_process_group()
