import datetime

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def my_shard(rank, world, n=1000):
    # contiguous split; the remainder goes to the first rank
    per = n // world
    start = rank * per
    end = start + per + (n % world if rank == 0 else 0)
    return torch.arange(start, end)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    idx = my_shard(rank, world)
    data = torch.randn(1000, 5)
    model = DDP(torch.nn.Linear(5, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = 0
    for i in range(0, len(idx), 37):
        x = data[idx[i:i + 37]]
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        batches += 1
    print(f"rank {rank}: {batches} batches", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
