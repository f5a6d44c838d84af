import multiprocessing as mp
import os

import torch
import torch.distributed as dist


def train(rank, world_size):
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world_size)
    w = torch.zeros(4, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(20):
        loss = ((w - 1.0) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        dist.all_reduce(w.grad)
        w.grad /= world_size
        opt.step()
    print(f"rank {rank}: w = {w.detach().tolist()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    world_size = int(os.environ.get("WORLD_SIZE", 2))
    procs = []
    for rank in range(world_size):
        p = mp.Process(target=train, args=(rank, world_size))
        p.start()
        procs.append(p)
    for p in procs:
        p.join()
