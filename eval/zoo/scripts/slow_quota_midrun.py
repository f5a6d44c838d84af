import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    t_prev = time.time()
    for step in range(1, 241):
        x = torch.randn(64, 512)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        now = time.time()
        dt = now - t_prev
        t_prev = now
        print(f"rank {rank} | step {step:4d} | loss {loss.item():.4f} | {dt * 1000:7.1f} ms | "
              f"{64 * world / dt:8.1f} samples/s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
