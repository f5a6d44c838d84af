"""Speech-command classifier on log-mel-like features; validation every 100 steps on every rank."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, EVAL_EVERY, LOG_EVERY = 1000, 100, 10


def batch(g, n):
    x = torch.randn(n, 1, 40, 32, generator=g)
    y = torch.randint(0, 12, (n,), generator=g)
    x[torch.arange(n), 0, y * 3, :] += 2.0
    return x, y


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                        nn.ReLU(), nn.AdaptiveAvgPool2d((4, 4)), nn.Flatten(), nn.Linear(512, 12))
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    gv = torch.Generator()
    print(f"rank {rank}/{world}: training {STEPS} steps, validation every {EVAL_EVERY}")
    t = time.time()
    for step in range(1, STEPS + 1):
        x, y = batch(g, 32)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % LOG_EVERY == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f} time/step {(time.time() - t) / LOG_EVERY:.4f}s")
            t = time.time()
        if step % EVAL_EVERY == 0:
            te = time.time()
            model.eval()
            gv.manual_seed(999 + rank)
            stats = torch.zeros(2)
            with torch.no_grad():
                for _ in range(12):
                    xv, yv = batch(gv, 64)
                    stats += torch.tensor([(model(xv).argmax(1) == yv).sum().item(), len(yv)])
            dist.all_reduce(stats)
            model.train()
            print(f"rank {rank} eval step {step} acc {stats[0] / stats[1]:.4f} eval_time {time.time() - te:.2f}s")
            t = time.time()
    dist.barrier()
    print(f"rank {rank} done, {STEPS} steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
