"""Small ViT-style patch classifier, DDP over gloo, started with torch.multiprocessing.spawn. MASTER_ADDR and
MASTER_PORT come from the environment (the team's run script exports MASTER_PORT=<port>)."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world):
    print(f"[worker {rank}] init_process_group(gloo) via {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
          flush=True)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(16 * 48, 128), nn.ReLU(), nn.Linear(128, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    t0 = time.time()
    for step in range(1, 301):
        x = torch.randn(64, 16, 48)
        loss = nn.functional.cross_entropy(model(x), torch.randint(0, 10, (64,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"[worker {rank}] step {step} loss {loss.item():.3f} ({time.time() - t0:.1f}s)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    mp.spawn(worker, args=(world,), nprocs=world)
