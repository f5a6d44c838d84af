import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ["ZOO_PORT"]
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    model = DDP(nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 1024)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    t0 = t_last = time.time()
    for it in range(1, 111):
        x = torch.randn(128, 1024)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0:
            now = time.time()
            samples_s = 10 * 128 * world / (now - t_last)
            if rank == 0:
                print(f"{time.strftime('%H:%M:%S')} it {it} loss {loss.item():.4f} time_ms {(now - t_last) * 100:.1f} "
                      f"samples/s {samples_s:.0f} elapsed {now - t0:.0f}s", flush=True)
            t_last = now
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(train, args=(2,), nprocs=2)
