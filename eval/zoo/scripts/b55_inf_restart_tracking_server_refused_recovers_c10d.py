"""Demand-forecasting model (MLP over lagged sales features) with DDP on 2 ranks, torchrun --max-restarts 1 with the
c10d rendezvous. Rank 0 checkpoints every 50 steps and then posts the step's metrics to the team's experiment tracking
server (TRACKING_URI, a small REST service); every (re)started worker resumes from ckpt/last.pt."""
import datetime
import json
import os
import urllib.request

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 200
TRACKING_URI = os.environ.get("TRACKING_URI", "http://127.0.0.1:5000")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(56, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 7))
model = DDP(net)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
start = 0
if os.path.exists("ckpt/last.pt"):
    state = torch.load("ckpt/last.pt")
    net.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
print(f"rank {rank}: restart {os.environ.get('TORCHELASTIC_RESTART_COUNT')}, from step {start + 1}", flush=True)


def log_metrics(step, metrics):
    body = json.dumps({"run_id": "forecast-b55", "step": step, "metrics": metrics}).encode()
    req = urllib.request.Request(f"{TRACKING_URI}/api/2.0/runs/log-batch", data=body,
                                 headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(req, timeout=10).read()


g = torch.Generator().manual_seed(rank * 7 + start)
for step in range(start + 1, STEPS + 1):
    x = torch.randn(256, 56, generator=g)
    y = x[:, :7].cumsum(1) * 0.5
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step}/{STEPS} mse {loss.item():.4f}", flush=True)
    if step % 50 == 0 and rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "step": step}, "ckpt/tmp.pt")
        os.replace("ckpt/tmp.pt", "ckpt/last.pt")
        log_metrics(step, {"train_mse": loss.item()})
        print(f"rank 0: checkpoint and metrics at step {step}", flush=True)
print(f"rank {rank}: finished {STEPS} steps", flush=True)
dist.destroy_process_group()
