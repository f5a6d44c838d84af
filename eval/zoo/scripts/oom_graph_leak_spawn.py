import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, world):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = os.environ.get("ZOO_PORT", "12355")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = DDP(nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 512)))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x_val = torch.randn(1024, 512)
    val_preds = []  # predictions on the fixed validation batch, for the snapshot ensemble at the end
    for step in range(200):
        x = torch.randn(256, 512)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        val_preds.append(model.module(x_val))
        if step % 10 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    ens = torch.stack(val_preds[-20:]).mean(0)
    if rank == 0:
        print("ensemble val mse", (ens - x_val).pow(2).mean().item())
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(train, args=(3,), nprocs=3)
