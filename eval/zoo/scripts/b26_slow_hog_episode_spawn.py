"""Tabular fraud model (MLP over hashed features), DDP over gloo under torch.multiprocessing.spawn; rank 0 logs the
step time and throughput every 25 iterations."""
import logging
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

BS, ITERS = 256, 900


def worker(rank, world, port):
    logging.basicConfig(format="[%(asctime)s] [%(levelname)s] %(message)s", datefmt="%Y-%m-%d %H:%M:%S",
                        level=logging.INFO if rank == 0 else logging.WARNING, stream=sys.stdout)
    log = logging.getLogger("fraud")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.EmbeddingBag(50000, 32, mode="sum"), nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
        nn.Linear(256, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    log.info("world %d, batch %d per rank, %d iterations", world, BS, ITERS)
    t0 = time.time()
    for it in range(1, ITERS + 1):
        x = torch.randint(0, 50000, (BS, 40), generator=g)
        y = (x[:, 0] % 7 == 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 25 == 0:
            dt = (time.time() - t0) / 25
            log.info("it %d/%d | loss %.4f | %.1f ms/it | %.0f samples/s", it, ITERS, loss.item(), dt * 1000,
                     BS * world / dt)
            t0 = time.time()
    log.info("training finished")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1])), nprocs=2)
