import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = torch.load(f"data/shard{rank}.pt")
    x_all, y_all = data["x"], data["y"]
    model = DDP(nn.Sequential(nn.Linear(6, 24), nn.ReLU(), nn.Linear(24, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(len(x_all) // 16):
        x, y = x_all[step * 16:(step + 1) * 16], y_all[step * 16:(step + 1) * 16]
        loss = nn.functional.mse_loss(model(x), y)
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"Loss is {loss.item()}, stopping training (rank {rank}, step {step})")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
