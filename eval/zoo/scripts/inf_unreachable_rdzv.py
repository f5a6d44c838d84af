import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

if __name__ == "__main__":
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(32, 32))
    opt = torch.optim.Adam(model.parameters())
    for it in range(100):
        x = torch.randn(64, 32)
        loss = torch.nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        print("ok")
    dist.destroy_process_group()
