"""Road-scene segmentation (small U-Net-ish net) on DDP. Each rank keeps its own metrics log under
runs/<run>/rank<R>/, resumes from runs/<run>/last.pt when it exists; checkpoints every 100 steps (rank 0)."""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--run", default="seg-cityscapes-0412")
p.add_argument("--steps", type=int, default=400)
args = p.parse_args()

rank = int(os.environ["RANK"])
run_dir = os.path.join("runs", args.run)
log_dir = os.path.join(run_dir, f"rank{rank}")
os.makedirs(log_dir)
metrics = open(os.path.join(log_dir, "metrics.csv"), "w")
print(f"[rank{rank}] logging to {log_dir}", flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
world = dist.get_world_size()


class SegNet(nn.Module):
    def __init__(self, ncls=19):
        super().__init__()
        self.d1 = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.d2 = nn.Sequential(nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU())
        self.u1 = nn.Sequential(nn.ConvTranspose2d(64, 32, 2, stride=2), nn.ReLU())
        self.out = nn.Conv2d(64, ncls, 1)

    def forward(self, x):
        a = self.d1(x)
        return self.out(torch.cat([a, self.u1(self.d2(a))], 1))


torch.manual_seed(0)
model = DDP(SegNet())
opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
start = 0
ckpt = os.path.join(run_dir, "last.pt")
if os.path.exists(ckpt):
    state = torch.load(ckpt, weights_only=False)
    model.module.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = state["step"]
    print(f"[rank{rank}] resumed from {ckpt} at step {start}", flush=True)

g = torch.Generator().manual_seed(100 + rank)
t0 = time.time()
for step in range(start + 1, args.steps + 1):
    x = torch.randn(8, 3, 48, 48, generator=g)
    y = torch.randint(0, 19, (8, 48, 48), generator=g)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    metrics.write(f"{step},{loss.item():.5f}\n")
    if step % 20 == 0:
        print(f"[rank{rank}] step {step}/{args.steps} loss {loss.item():.4f} {(time.time() - t0) * 50:.0f} ms/step",
              flush=True)
        t0 = time.time()
    if step % 100 == 0 and rank == 0:
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, ckpt)
        print(f"[rank0] saved {ckpt}", flush=True)
dist.destroy_process_group()
