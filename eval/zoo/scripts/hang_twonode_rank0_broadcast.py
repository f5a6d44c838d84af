import datetime
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    is_main = rank == 0
    model = DDP(nn.Linear(64, 64))
    opt = torch.optim.AdamW(model.parameters())
    for step in range(1, 121):
        loss = model(torch.randn(16, 64)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 40 == 0:
            print(f"node {os.environ['GROUP_RANK']} rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if step == 60 and is_main:
            # share the updated schedule with the other ranks
            sched = [{"lr": 1e-4, "warmup": 10}]
            dist.broadcast_object_list(sched, src=0)
            with open("schedule.json", "w") as f:
                json.dump(sched[0], f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
