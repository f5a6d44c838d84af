"""Query-tower model for ads retrieval, DDP over gloo started with torch.multiprocessing.spawn; a timing line every
50 iterations from each process."""
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def worker(rank, world, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512),
                                                              nn.ReLU(), nn.Linear(512, 128)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    iters = 2400
    t0 = time.time()
    for it in range(1, iters + 1):
        x = torch.randn(128, 256, generator=g)
        y = torch.randn(128, 128, generator=g)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 50 == 0:
            dt = (time.time() - t0) / 50
            print(f"[{time.strftime('%H:%M:%S')}] proc{rank} it {it}/{iters} loss {loss.item():.4f} "
                  f"{1000 * dt:.1f} ms/it {128 / dt:.0f} queries/s")
            t0 = time.time()
    if rank == 0:
        print("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1])), nprocs=2)
