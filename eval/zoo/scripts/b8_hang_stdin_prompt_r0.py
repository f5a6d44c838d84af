"""Sentiment model; rank 0 prepares the run directory and asks before overwriting a previous run."""
import argparse
import datetime
import json
import os
import shutil

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare_run_dir(path, args):
    if os.path.exists(os.path.join(path, "config.json")):
        ans = input(f"{path} already holds a run. Overwrite it? [y/N] ")
        if ans.strip().lower() != "y":
            raise SystemExit("aborted")
        shutil.rmtree(path)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(vars(args), f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--run-dir", default="runs/sentiment")
    p.add_argument("--steps", type=int, default=300)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    print(f"rank {rank}: process group ready (world {dist.get_world_size()})")
    if rank == 0:
        prepare_run_dir(args.run_dir, args)
    dist.barrier()
    model = DDP(nn.EmbeddingBag(5000, 2))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, args.steps + 1):
        x = torch.randint(0, 5000, (32, 20), generator=g)
        y = torch.randint(0, 2, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"rank {rank}: step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
