"""MLP classifier on hashed features, plain DDP (gloo). Logs every 10 steps from rank 0."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

TOTAL_STEPS = 700
LOG_EVERY = 10


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234 + rank)
    model = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 512), nn.GELU(), nn.Linear(512, 20))
    model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    w = torch.randn(512, 20)
    if rank == 0:
        print(f"world_size={world} steps={TOTAL_STEPS} global_batch={32 * world}")
    t_last = time.perf_counter()
    for step in range(1, TOTAL_STEPS + 1):
        x = torch.randn(32, 512)
        y = (x @ w).argmax(1)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % LOG_EVERY == 0:
            now = time.perf_counter()
            if rank == 0:
                print(f"step {step}/{TOTAL_STEPS} | loss {loss.item():.4f} | {(now - t_last) / LOG_EVERY * 1000:.1f} ms/step")
            t_last = now
    if rank == 0:
        print("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
