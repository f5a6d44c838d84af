import multiprocessing as mp
import os

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2


def run(rank):
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(WORLD_SIZE)
    dist.init_process_group("gloo", init_method="env://")
    rng = np.random.default_rng(rank)
    features = rng.standard_normal((256, 12))          # float64
    targets = features @ rng.standard_normal((12, 1))
    model = DDP(torch.nn.Linear(12, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(0, 256, 32):
        x = torch.from_numpy(features[i:i + 32])
        y = torch.from_numpy(targets[i:i + 32])
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} batch {i // 32} loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", os.environ.get("ZOO_PORT", "29500"))
    procs = [mp.Process(target=run, args=(r,)) for r in range(WORLD_SIZE)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print("exit codes:", [p.exitcode for p in procs])
