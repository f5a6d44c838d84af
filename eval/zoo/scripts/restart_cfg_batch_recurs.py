import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--global-batch-size", type=int, default=256)
    ap.add_argument("--micro-batch-size", type=int, default=16)
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert args.global_batch_size % (args.micro_batch_size * world) == 0, (
        f"global batch size {args.global_batch_size} is not divisible by micro batch size "
        f"{args.micro_batch_size} x data parallel size {world}")
    accum = args.global_batch_size // (args.micro_batch_size * world)
    model = DDP(nn.Linear(32, 32))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(args.steps):
        for _ in range(accum):
            x = torch.randn(args.micro_batch_size, 32)
            ((model(x) - x).pow(2).mean() / accum).backward()
        opt.step()
        opt.zero_grad()
        if rank == 0 and step % 10 == 0:
            print(f"step {step}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
