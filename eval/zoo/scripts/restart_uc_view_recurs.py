import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

BATCH = 32


def load_shard(rank, world):
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(5000, 24, generator=g)
    per = -(-len(x) // (world * BATCH)) * BATCH  # whole batches per rank; the last shard is shorter
    return x[rank * per:(rank + 1) * per]


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    shard = load_shard(rank, world)
    print(f"[rank {rank}] attempt {attempt}: shard of {len(shard)} rows", flush=True)
    model = DDP(nn.Sequential(nn.Linear(24 * 4, 64), nn.ReLU(), nn.Linear(64, 24 * 4)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n_batches = (len(shard) + BATCH - 1) // BATCH
    for i in range(n_batches):
        x = shard[i * BATCH:(i + 1) * BATCH].view(BATCH // 4, -1)  # 4 consecutive frames per sample
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 10 == 0:
            print(f"[rank {rank}] step {i}/{n_batches} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
