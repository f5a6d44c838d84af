import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.calls = 0
        self.warmup = 3

    def forward(self, x):
        self.calls += 1
        h = torch.relu(self.fc1(x))
        if self.calls > self.warmup:  # stochastic-depth style extra path after warm-up
            h = h * torch.sigmoid(h)
        return x + self.fc2(h)


class Net(nn.Module):
    def __init__(self, d=64, n=4):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d) for _ in range(n))
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False)  # save activation memory
        return self.out(x)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(Net())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(10):
        x = torch.randn(32, 64)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
