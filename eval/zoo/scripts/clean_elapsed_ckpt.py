"""Skip-gram embeddings, DDP (gloo); rank 0 prints cumulative elapsed time; checkpoint every 150 iterations."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Embedding(20000, 128), nn.Linear(128, 20000)))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    os.makedirs("ckpt", exist_ok=True)
    start = time.time()
    for it in range(1, 601):
        centre = torch.randint(0, 20000, (64,))
        ctx = (centre + torch.randint(-3, 4, (64,))).clamp(0, 19999)
        loss = nn.functional.cross_entropy(model(centre), ctx)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0 and rank == 0:
            print(f"it: {it} loss: {loss.item():.4f} elapsed: {time.time() - start:.1f}s")
        if it % 150 == 0:
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "it": it}, f"ckpt/it{it}.pt")
                print(f"checkpoint saved: ckpt/it{it}.pt")
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
