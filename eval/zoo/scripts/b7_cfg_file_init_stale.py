"""Two-process trainer using a shared-filesystem rendezvous file (the cluster has no fixed master port)."""
import argparse
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init-file", default="/shared/jobs/sentiment/dist_init")
    args = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method=f"file://{args.init_file}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=20))
    print(f"rank {rank} initialised", flush=True)
    model = DDP(nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(200):
        x = torch.randn(32, 64)
        loss = nn.functional.cross_entropy(model(x), x[:, :4].argmax(1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
