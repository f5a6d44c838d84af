"""Intent classifier (MLP over bag-of-words) with hand-written data parallelism on 3 ranks: one flat all-reduce of
all gradients per step. Rank 0 resolves the run's configuration (the base YAML plus command-line overrides, and the
vocabulary size once it has built the vocabulary) and writes it to run/resolved_config.json; the other ranks read
that file, so that every rank builds the same model."""
import argparse
import collections
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import yaml

p = argparse.ArgumentParser()
p.add_argument("--config", default="configs/intent.yaml")
p.add_argument("--hidden", type=int, default=None)
args = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
RESOLVED = "run/resolved_config.json"

if rank == 0:
    cfg = yaml.safe_load(open(args.config))
    if args.hidden:
        cfg["hidden"] = args.hidden
    counts = collections.Counter(w for line in open("data/utterances.txt") for w in line.split()[1:])
    cfg["vocab"] = len([w for w, c in counts.items() if c >= cfg["min_count"]]) + 1
    os.makedirs("run", exist_ok=True)
    json.dump(cfg, open(RESOLVED, "w"), indent=1)
    print(f"rank 0: resolved config written to {RESOLVED}: {cfg}", flush=True)
else:
    while not os.path.exists(RESOLVED):  # wait for rank 0
        time.sleep(0.1)
    cfg = json.load(open(RESOLVED))
    print(f"rank {rank}: read {RESOLVED}: {cfg}", flush=True)

model = nn.Sequential(nn.Linear(cfg["vocab"], cfg["hidden"]), nn.ReLU(), nn.Linear(cfg["hidden"], cfg["intents"]))
opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
n_params = sum(p.numel() for p in model.parameters())
print(f"rank {rank}: model vocab={cfg['vocab']} hidden={cfg['hidden']} params={n_params}", flush=True)
g = torch.Generator().manual_seed(rank)
for step in range(1, 101):
    x = (torch.rand(64, cfg["vocab"], generator=g) < 0.02).float()
    y = torch.randint(0, cfg["intents"], (64,), generator=g)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for p in model.parameters():
        p.grad.copy_(flat[off:off + p.numel()].view_as(p))
        off += p.numel()
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
