import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class MultiTaskNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.cls_head = nn.Linear(32, 3)
        self.reg_head = nn.Linear(32, 1)  # used once the regression loss is switched on

    def forward(self, x):
        return self.cls_head(self.encoder(x))


def worker(rank, world_size):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ.get("ZOO_PORT", "29500")
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    model = DDP(MultiTaskNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(50):
        x = torch.randn(32, 16)
        y = torch.randint(0, 3, (32,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    world_size = 2
    mp.spawn(worker, args=(world_size,), nprocs=world_size, join=True)
