import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    node = int(os.environ.get("GROUP_RANK", 0))
    print(f"global rank {dist.get_rank()} (node {node}) of {dist.get_world_size()}")
    model = DDP(torch.nn.Linear(64, 64))
    opt = torch.optim.Adam(model.parameters())
    for _ in range(20):
        x = torch.randn(32, 64)
        loss = (model(x) - x).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
