"""Char-level MLP language model, one process per node over the data network; rank 0 logs step times."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    ctx, d = 16, 48
    model = DDP(nn.Sequential(nn.Embedding(128, d), nn.Flatten(), nn.Linear(ctx * d, 512), nn.GELU(),
                              nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 128)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    steps = 330
    t_win = time.time()
    for step in range(1, steps + 1):
        x = torch.randint(0, 128, (32, ctx + 1), generator=g)
        loss = nn.functional.cross_entropy(model(x[:, :-1]), x[:, -1])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 and rank == 0:
            print(f"iter {step:4d}/{steps} | loss {loss.item():.4f} | {(time.time() - t_win) * 100:.1f} ms/iter")
            t_win = time.time()
    dist.barrier()
    if rank == 0:
        print("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
