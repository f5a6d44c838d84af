import argparse
import os

import torch
import torch.distributed as dist


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--tensor-parallel-size", type=int, default=2)
    p.add_argument("--steps", type=int, default=100)
    return p.parse_args()


def main():
    args = parse()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    tp = args.tensor_parallel_size
    assert world % tp == 0, f"world size {world} is not divisible by tensor parallel size {tp}"
    dp = world // tp
    tp_group = dist.new_group([r for r in range(world) if r // tp == rank // tp])
    print(f"rank {rank}: dp={dp} tp={tp}", flush=True)
    w = torch.randn(256, 256 // tp, requires_grad=True)
    for step in range(args.steps):
        y = torch.randn(8, 256) @ w
        parts = [torch.empty_like(y) for _ in range(tp)]
        dist.all_gather(parts, y, group=tp_group)
        torch.cat(parts, dim=1).sum().backward()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
