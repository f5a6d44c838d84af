import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(nn.Sequential(*[nn.Linear(512, 512) for _ in range(8)]))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    os.makedirs("outputs", exist_ok=True)
    for step in range(1, 41):
        loss = model(torch.randn(16, 512)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            path = f"outputs/ckpt_{step}.pt"
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict()}, path)
                print(f"saved {path}", flush=True)
            # every rank reloads the averaged weights (sanity check of the checkpoint)
            state = torch.load(path, map_location="cpu")
            model.module.load_state_dict(state["model"])
            print(f"rank {rank} reloaded {path} at {time.strftime('%H:%M:%S')}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
