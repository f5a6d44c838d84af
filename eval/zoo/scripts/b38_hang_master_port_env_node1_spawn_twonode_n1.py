"""Click-model training on two nodes without torchrun: the same script is started on each node
(`python train.py --node-rank K`) and spawns one process per local slot with torch.multiprocessing.spawn.
The rendezvous address comes from the environment (MASTER_ADDR / MASTER_PORT exported for the job)."""
import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class ClickModel(nn.Module):
    def __init__(self, n_queries=50000, n_docs=50000, d=48):
        super().__init__()
        self.q = nn.Embedding(n_queries, d)
        self.d = nn.Embedding(n_docs, d)
        self.pos = nn.Embedding(10, 1)

    def forward(self, q, d, pos):
        return (self.q(q) * self.d(d)).sum(-1) + self.pos(pos).squeeze(-1)


def run(local_rank, args):
    rank = args.node_rank * args.nproc_per_node + local_rank
    world = args.nnodes * args.nproc_per_node
    print(f"[node {args.node_rank} rank {rank}] init_process_group env:// "
          f"MASTER_ADDR={os.environ['MASTER_ADDR']} MASTER_PORT={os.environ['MASTER_PORT']} world_size={world}")
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    print(f"[node {args.node_rank} rank {rank}] process group ready")
    torch.set_num_threads(1)
    model = DDP(ClickModel())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 501):
        q = torch.randint(0, 50000, (256,), generator=g)
        d = torch.randint(0, 50000, (256,), generator=g)
        pos = torch.randint(0, 10, (256,), generator=g)
        click = (torch.rand(256, generator=g) < 1 / (1 + pos)).float()
        loss = F.binary_cross_entropy_with_logits(model(q, d, pos), click)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"[node {args.node_rank} rank {rank}] step {step}/500 loss {loss.item():.4f} "
                  f"{(time.time() - t0) * 20:.1f} ms/step")
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nnodes", type=int, default=2)
    ap.add_argument("--node-rank", type=int, required=True)
    ap.add_argument("--nproc-per-node", type=int, default=2)
    args = ap.parse_args()
    print(f"node {args.node_rank}: spawning {args.nproc_per_node} workers")
    mp.spawn(run, args=(args,), nprocs=args.nproc_per_node, join=True)
