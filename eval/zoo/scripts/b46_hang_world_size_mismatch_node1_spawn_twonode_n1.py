"""Product-title encoder (a bag-of-words MLP) trained with DDP across nodes; each node starts its processes with
torch.multiprocessing.spawn. The command line gives the node's rank, the processes per node and the job's world size;
MASTER_ADDR / MASTER_PORT come from the environment of the job script."""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(local_rank, args):
    rank = args.node_rank * args.nproc_per_node + local_rank
    print(f"[node{args.node_rank}:{local_rank}] rank {rank} of {args.world_size} -> "
          f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
    dist.init_process_group("gloo", rank=rank, world_size=args.world_size, timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    print(f"[node{args.node_rank}:{local_rank}] process group ready", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(30000, 64), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 40)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 201):
        tok = torch.randint(0, 30000, (64, 24), generator=g)
        y = tok[:, 0] % 40
        loss = F.cross_entropy(model(tok), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"[node{args.node_rank}:{local_rank}] step {step}/200 loss {loss.item():.4f} "
                  f"({(time.time() - t0) / step * 1000:.0f} ms/step)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--node-rank", type=int, required=True)
    ap.add_argument("--nproc-per-node", type=int, default=2)
    ap.add_argument("--world-size", type=int, required=True)
    args = ap.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.nproc_per_node)
