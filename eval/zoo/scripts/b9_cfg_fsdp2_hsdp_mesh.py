"""Decoder LM with FSDP2 (fully_shard) in HSDP layout: replicate across nodes, shard within a node."""
import argparse
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(self.ln(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--replicate", type=int, default=2)  # from configs/hsdp_2x4.yaml
    p.add_argument("--shard", type=int, default=4)
    p.add_argument("--d-model", type=int, default=256)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[rank{rank}] world {world}, building mesh replicate={args.replicate} x shard={args.shard}", flush=True)
    mesh = init_device_mesh("cpu", (args.replicate, args.shard), mesh_dim_names=("replicate", "shard"))
    model = nn.Sequential(nn.Embedding(4000, args.d_model), *[Block(args.d_model) for _ in range(4)],
                          nn.Linear(args.d_model, 4000))
    for blk in model[1:5]:
        fully_shard(blk, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(1, 101):
        x = torch.randint(0, 4000, (8, 64))
        loss = nn.functional.cross_entropy(model(x[:, :-1]).reshape(-1, 4000), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
