"""Demand forecaster (MLP over lagged sales features) on DDP, 2 ranks, hyperparameters from configs/train.yaml.
The loop keeps the best loss seen and stops a run that is clearly diverging instead of burning the allocation."""
import argparse
import datetime
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--config", default="configs/train.yaml")
args = p.parse_args()
cfg = yaml.safe_load(open(args.config))

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
if rank == 0:
    print(f"config {args.config}: {cfg}", flush=True)

g = torch.Generator().manual_seed(100 + rank)
w_true = torch.randn(64, 1, generator=torch.Generator().manual_seed(7))
model = DDP(nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 1)))
opt = torch.optim.SGD(model.parameters(), lr=cfg["optim"]["lr"], momentum=cfg["optim"]["momentum"])
best = math.inf
for step in range(1, cfg["train"]["steps"] + 1):
    x = torch.randn(cfg["train"]["batch_size"], 64, generator=g)
    y = x @ w_true + 0.1 * torch.randn(len(x), 1, generator=g)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    lv = loss.item()
    if step % cfg["train"]["log_every"] == 0 or not math.isfinite(lv):
        print(f"rank {rank} step {step} loss {lv:.4e} lr {opt.param_groups[0]['lr']:g}", flush=True)
    best = min(best, lv)
    if not math.isfinite(lv) or (step > 20 and lv > 100 * best):
        raise RuntimeError(f"Loss is diverging at step {step} (loss {lv:.4e}, best {best:.4e}); "
                           f"try lowering the learning rate")
dist.destroy_process_group()
