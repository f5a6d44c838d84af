"""Regression on tabular features with a custom loop and a tqdm bar (rank 0), DDP over gloo."""
import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

STEPS = 800


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    net = nn.Sequential(nn.Linear(256, 768), nn.ReLU(), nn.Linear(768, 768), nn.ReLU(), nn.Linear(768, 1))
    net = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)
    coef = torch.linspace(-1, 1, 256)
    bar = tqdm(range(STEPS), desc="train", disable=rank != 0)
    for _ in bar:
        x = torch.randn(48, 256)
        y = (x * coef).sum(1, keepdim=True) + 0.1 * torch.randn(48, 1)
        loss = nn.functional.mse_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
