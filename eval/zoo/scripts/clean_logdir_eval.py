"""Convnet on synthetic images, 3 ranks, each rank logging every step; evaluation every 50 steps."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def evaluate(net, rank):
    net.eval()
    g = torch.Generator().manual_seed(100 + rank)
    correct = total = 0
    with torch.no_grad():
        for _ in range(20):
            x = torch.randn(64, 3, 32, 32, generator=g)
            y = torch.randint(0, 10, (64,), generator=g)
            correct += (net(x).argmax(1) == y).sum().item()
            total += 64
    t = torch.tensor([correct, total], dtype=torch.float64)
    dist.all_reduce(t)
    net.train()
    return (t[0] / t[1]).item()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    net = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 10)))
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
    for step in range(1, 401):
        t0 = time.perf_counter()
        x = torch.randn(32, 3, 32, 32)
        y = torch.randint(0, 10, (32,))
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank{rank} step {step} loss {loss.item():.4f} step_time {(time.perf_counter() - t0) * 1000:.1f}ms")
        if step % 50 == 0:
            t1 = time.perf_counter()
            acc = evaluate(net, rank)
            print(f"rank{rank} eval step {step} acc {acc:.4f} eval_time {time.perf_counter() - t1:.2f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
