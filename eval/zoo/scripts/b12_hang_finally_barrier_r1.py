"""Toxicity classifier over hashed bag-of-words features, plain DDP.

Each rank reads data/labelled/part-<rank>.jsonl ({"tokens": [...], "label": 0/1}) written by the labelling tool.
The cleanup in `finally` makes sure every rank leaves the process group together.
"""
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from datetime import timedelta
from torch.nn.parallel import DistributedDataParallel as DDP

BUCKETS = 2 ** 14


def featurize(rec):
    x = torch.zeros(BUCKETS)
    for t in rec["tokens"]:
        x[hash(t) % BUCKETS] += 1.0
    return x, float(rec["label"])


def batches(path, bs):
    with open(path) as f:
        recs = [json.loads(line) for line in f]
    for i in range(0, len(recs) - bs + 1, bs):
        xs, ys = zip(*(featurize(r) for r in recs[i:i + bs]))
        yield torch.stack(xs), torch.tensor(ys)


def train(rank):
    model = DDP(nn.Sequential(nn.Linear(BUCKETS, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step, (x, y) in enumerate(batches(f"data/labelled/part-{rank}.jsonl", 16), 1):
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f} {(time.time() - t0) / 20:.3f}s/step", flush=True)
            t0 = time.time()


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    os.environ["PYTHONHASHSEED"] = "0"
    try:
        train(rank)
    finally:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
