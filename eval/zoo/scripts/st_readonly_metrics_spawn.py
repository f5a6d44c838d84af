import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

OUTPUT_DIR = "/mnt/results/exp42"


def train(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ.get("ZOO_PORT", "29500"),
                            rank=rank, world_size=world)
    model = DDP(torch.nn.Linear(10, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    history = []
    for epoch in range(3):
        for _ in range(20):
            x = torch.randn(8, 10)
            loss = (model(x) - x.mean(1, keepdim=True)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        history.append({"epoch": epoch, "loss": loss.item(), "time": time.time()})
        if rank == 0:
            os.makedirs(OUTPUT_DIR, exist_ok=True)
            with open(os.path.join(OUTPUT_DIR, "metrics.json"), "w") as f:
                json.dump(history, f)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(train, args=(2,), nprocs=2)
