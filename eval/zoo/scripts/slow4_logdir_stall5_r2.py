"""Small convnet on synthetic 32x32 images, DDP over gloo; every rank logs every step."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                        nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 10))
    net = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
    for step in range(1, 501):
        t0 = time.perf_counter()
        x = torch.randn(32, 3, 32, 32)
        y = torch.randint(0, 10, (32,))
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank{rank} step {step} loss {loss.item():.4f} step_time {(time.perf_counter() - t0) * 1000:.1f}ms")
    dist.barrier()
    if rank == 0:
        print("training complete")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
