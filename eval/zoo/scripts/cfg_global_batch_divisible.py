import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--global-batch-size", type=int, default=256)
parser.add_argument("--micro-batch-size", type=int, default=8)
parser.add_argument("--train-iters", type=int, default=50)
args = parser.parse_args()

dist.init_process_group("gloo")
world = dist.get_world_size()
rank = dist.get_rank()

if args.global_batch_size % (args.micro_batch_size * world) != 0:
    raise ValueError(
        f"global batch size ({args.global_batch_size}) is not divisible by "
        f"micro batch size ({args.micro_batch_size}) times data parallel size ({world})"
    )
grad_accum = args.global_batch_size // (args.micro_batch_size * world)
if rank == 0:
    print(f"gradient accumulation steps: {grad_accum}")

model = DDP(torch.nn.Linear(32, 32))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for it in range(args.train_iters):
    for _ in range(grad_accum):
        x = torch.randn(args.micro_batch_size, 32)
        (model(x) - x).pow(2).mean().div(grad_accum).backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
