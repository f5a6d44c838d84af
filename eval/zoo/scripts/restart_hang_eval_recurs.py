import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model):
    model.eval()
    correct = torch.zeros(1)
    with torch.no_grad():
        for _ in range(20):
            x = torch.randn(128, 16)
            correct += (model(x).argmax(1) == (x.sum(1) > 0).long()).sum()
    dist.all_reduce(correct)  # global accuracy
    model.train()
    return correct.item() / (20 * 128 * dist.get_world_size())


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    print(f"[rank {rank}] restart count {os.environ.get('TORCHELASTIC_RESTART_COUNT')}", flush=True)
    model = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(5):
        for step in range(40):
            x = torch.randn(64, 16)
            loss = nn.functional.cross_entropy(model(x), (x.sum(1) > 0).long())
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[rank {rank}] epoch {epoch} loss {loss.item():.4f}", flush=True)
        if rank == 0:
            print(f"epoch {epoch} val_acc {evaluate(model.module):.3f}", flush=True)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
