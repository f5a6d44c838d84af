"""Launch N workers on this box with env:// rendezvous (settings exported by the job script)."""
import datetime
import multiprocessing as mp
import os

import torch
import torch.distributed as dist

NUM_WORKERS = 2


def worker(rank):
    world_size = int(os.environ["WORLD_SIZE"])
    print(f"worker {rank}: joining process group (world_size={world_size})", flush=True)
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=15))
    t = torch.ones(1) * rank
    dist.all_reduce(t)
    print(f"worker {rank}: sum of ranks {t.item()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    ps = [ctx.Process(target=worker, args=(r,)) for r in range(NUM_WORKERS)]
    [p.start() for p in ps]
    [p.join() for p in ps]
