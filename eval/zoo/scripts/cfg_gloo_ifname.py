import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(100, 200), nn.ReLU(), nn.Linear(200, 10))

    def forward(self, x):
        return self.net(x)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    print(f"rank {rank} initialised, GLOO_SOCKET_IFNAME={os.environ.get('GLOO_SOCKET_IFNAME')}", flush=True)
    model = DDP(MLP())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(20):
        out = model(torch.randn(64, 100))
        loss = out.logsumexp(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()
