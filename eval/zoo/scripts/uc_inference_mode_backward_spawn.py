import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def compute_loss(model, batch):
    x, y = batch
    return nn.functional.cross_entropy(model(x), y)


@torch.inference_mode()
def evaluate(model, batches):
    return sum(compute_loss(model, b).item() for b in batches) / len(batches)


def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ["ZOO_PORT"]
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = DDP(nn.Sequential(nn.Linear(20, 40), nn.ReLU(), nn.Linear(40, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    val = [(torch.randn(16, 20), torch.randint(0, 3, (16,))) for _ in range(4)]
    with torch.inference_mode():
        baseline = evaluate(model, val)
        print(f"rank {rank}: val loss before training {baseline:.4f}", flush=True)
        for step in range(30):
            batch = (torch.randn(16, 20), torch.randint(0, 3, (16,)))
            loss = compute_loss(model, batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
