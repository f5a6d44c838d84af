import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from safetensors.torch import save_file

OUT = "/mnt/scratch/run-0412"


def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ["ZOO_PORT"]
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(6)])
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    for step in range(1, 31):
        x = torch.randn(16, 1024)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        if step % 10 == 0:
            if rank == 0:
                os.makedirs(OUT, exist_ok=True)
                path = f"{OUT}/model-step{step}.safetensors"
                save_file({k: v.contiguous() for k, v in model.state_dict().items()}, path)
                print(f"saved {path}", flush=True)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
