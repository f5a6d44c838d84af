"""Review-sentiment regressor (bag of hashed tokens + MLP) on DDP, 2 ranks, under torchrun with one restart
allowed. Each rank reads its JSON-lines shard (data/reviews-<R>.jsonl); rank 0 creates the run directory
runs/<name>/ for metrics and checkpoints."""
import argparse
import datetime
import json
import os
import zlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--name", default="sentiment-base")
args = p.parse_args()

rank = int(os.environ["RANK"])
if rank == 0:
    run_dir = f"runs/{args.name}"
    os.makedirs(run_dir)  # a fresh directory per run
    print(f"run directory {run_dir}", flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
torch.set_num_threads(1)
torch.manual_seed(0)


def featurize(text, dim=2048):
    v = torch.zeros(dim)
    for tok in text.lower().split():
        v[zlib.crc32(tok.encode()) % dim] += 1.0
    return v


def batches(path, bs=32):
    xs, ys = [], []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            xs.append(featurize(rec["text"]))
            ys.append(float(rec["stars"]))
            if len(xs) == bs:
                yield torch.stack(xs), torch.tensor(ys)
                xs, ys = [], []


model = DDP(nn.Sequential(nn.Linear(2048, 128), nn.ReLU(), nn.Linear(128, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step, (x, y) in enumerate(batches(f"data/reviews-{rank}.jsonl"), 1):
    loss = F.mse_loss(model(x).squeeze(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
