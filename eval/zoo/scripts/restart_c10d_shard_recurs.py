import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    restarts = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    print(f"[rank {rank}] restart {restarts}: loading data/shard{rank}.pt", flush=True)
    shard = torch.load(f"data/shard{rank}.pt")
    x, y = shard["x"], shard["y"]
    model = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(20):
        for i in range(0, len(x), 32):
            loss = nn.functional.mse_loss(model(x[i:i + 32]), y[i:i + 32])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[rank {rank}] epoch {epoch} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
