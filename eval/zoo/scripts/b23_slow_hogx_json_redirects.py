"""Tabular click-through model (hashed feature embeddings + MLP), DDP over gloo; JSON log records with the step
time every 10 steps, written by every rank."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(2 ** 16, 64, mode="sum"), nn.Linear(64, 256), nn.ReLU(),
                              nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    t_last = time.time()
    for step in range(1, 601):
        x = torch.randint(0, 2 ** 16, (512, 39), generator=g)
        y = torch.rand(512, generator=g).lt(0.1).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            now = time.time()
            print(json.dumps({"ts": round(now, 3), "rank": rank, "step": step, "loss": round(loss.item(), 4),
                              "step_time_ms": round(100 * (now - t_last), 1)}), flush=True)
            t_last = now
    dist.barrier()
    if rank == 0:
        print(json.dumps({"ts": round(time.time(), 3), "rank": rank, "event": "done", "steps": 600}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
