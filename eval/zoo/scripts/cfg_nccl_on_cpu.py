import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    return dist.get_rank(), device


def main():
    rank, device = setup()
    model = nn.Linear(10, 10).to(device)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for step in range(10):
        x = torch.randn(20, 10, device=device)
        loss = ddp(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        print("finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
