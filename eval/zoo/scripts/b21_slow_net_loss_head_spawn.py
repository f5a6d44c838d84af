"""Speaker-ID x-vector-style model on precomputed frames, two nodes; each node runs
`python train_spk.py --node-rank K ...`, which spawns its local process(es); rendezvous over tcp://."""
import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def model():
    return nn.Sequential(nn.Conv1d(40, 512, 5, padding=2), nn.ReLU(), nn.Conv1d(512, 512, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 400))


def worker(local_rank, a):
    rank, world = a.node_rank * a.nproc + local_rank, a.nnodes * a.nproc
    dist.init_process_group("gloo", init_method=f"tcp://{a.master_addr}:{a.master_port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    net = DDP(model())
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    t, n = time.time(), 0
    for step in range(1, 601):
        x = torch.randn(16, 40, 50, generator=g)
        y = torch.randint(0, 400, (16,), generator=g)
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        n += x.shape[0] * world
        if rank == 0 and step % 30 == 0:
            dt = time.time() - t
            print(f"[{time.strftime('%H:%M:%S')}] step {step}/600 loss {loss.item():.3f} {n / dt:.1f} samples/s", flush=True)
            t, n = time.time(), 0
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--nproc", type=int, default=1)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29500)
    mp.spawn(worker, args=(p.parse_args(),), nprocs=p.parse_args().nproc)
