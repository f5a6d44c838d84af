import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(nn.Sequential(nn.Linear(16, 16), nn.BatchNorm1d(16), nn.Linear(16, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(40):
        x = torch.randn(32, 16)
        loss = nn.functional.cross_entropy(model(x), (x[:, 0] > 0).long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 20:
            stats = torch.tensor([loss.item(), float(rank)])
            if rank == world - 1:
                dist.broadcast(stats, src=world - 1)  # share the last rank's view
            else:
                dist.all_reduce(stats)
            print(f"rank {rank} stats {stats.tolist()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
