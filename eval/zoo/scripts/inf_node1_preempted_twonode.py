import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    node = int(os.environ["GROUP_RANK"])
    print(f"rank {rank}/{dist.get_world_size()} on node {node} local_rank {os.environ['LOCAL_RANK']}",
          flush=True)
    model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(1, 1201):
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 and int(os.environ["LOCAL_RANK"]) == 0:
            print(f"node{node} step {step} loss {loss.item():.3f}", flush=True)
        time.sleep(0.01)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
