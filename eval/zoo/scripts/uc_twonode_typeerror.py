import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model):
    correct = total = 0
    with torch.no_grad():
        for _ in range(10):
            x = torch.randn(64, 32)
            correct += (model(x).argmax(1) == (x[:, 0] > 0).long()).sum().item()
            total += 64
    return correct / total


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"node {os.environ['GROUP_RANK']} rank {rank} of {world} started", flush=True)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2)))
    opt = torch.optim.Adam(model.parameters())
    t0 = time.time()
    for step in range(1, 301):
        x = torch.randn(64, 32)
        loss = nn.functional.cross_entropy(model(x), (x[:, 0] > 0).long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 and rank == world - 1:  # the last rank runs the held-out eval
            acc = evaluate(model.module)
            print(f"[eval] step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s) acc: " + acc, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
