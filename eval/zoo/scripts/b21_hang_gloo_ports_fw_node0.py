"""Two-tower retrieval model on two CPU nodes. Each node runs `python train_retrieval.py --node-rank K`, which spawns
its local processes; rendezvous over tcp:// on the head node."""
import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def tower():
    return nn.Sequential(nn.EmbeddingBag(30000, 64), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.d = tower(), tower()

    def forward(self, q, d):
        return self.q(q) @ self.d(d).t()


def worker(local_rank, args):
    rank = args.node_rank * args.nproc + local_rank
    world = args.nnodes * args.nproc
    print(f"{time.strftime('%H:%M:%S')} rank {rank}/{world}: init_process_group tcp://{args.master_addr}:{args.master_port}",
          flush=True)
    dist.init_process_group("gloo", init_method=f"tcp://{args.master_addr}:{args.master_port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=20))
    print(f"{time.strftime('%H:%M:%S')} rank {rank}: process group ready", flush=True)
    torch.manual_seed(0)
    model = DDP(TwoTower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 501):
        q, d = torch.randint(0, 30000, (128, 8), generator=g), torch.randint(0, 30000, (128, 32), generator=g)
        loss = nn.functional.cross_entropy(model(q, d), torch.arange(128))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 50 == 0:
            print(f"{time.strftime('%H:%M:%S')} step {step}/500 loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--nproc", type=int, default=1)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29500)
    args = p.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.nproc)
