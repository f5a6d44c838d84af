"""MLP classifier, 4 ranks, plain DDP; rank 0 logs every 10 steps; validation every 200 steps."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

TOTAL_STEPS = 600


def validate(model, w):
    model.eval()
    g = torch.Generator().manual_seed(5)
    hits = torch.zeros(2)
    with torch.no_grad():
        for _ in range(40):
            x = torch.randn(128, 512, generator=g)
            hits += torch.tensor([(model(x).argmax(1) == (x @ w).argmax(1)).sum().item(), 128.0])
    dist.all_reduce(hits)
    model.train()
    return (hits[0] / hits[1]).item()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(99)
    w = torch.randn(512, 20)
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 512),
                                                              nn.GELU(), nn.Linear(512, 20)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t_last = time.perf_counter()
    for step in range(1, TOTAL_STEPS + 1):
        x = torch.randn(32, 512)
        loss = F.cross_entropy(model(x), (x @ w).argmax(1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            now = time.perf_counter()
            if rank == 0:
                print(f"step {step}/{TOTAL_STEPS} | loss {loss.item():.4f} | {(now - t_last) / 10 * 1000:.1f} ms/step")
            t_last = now
        if step % 200 == 0:
            acc = validate(model, w)
            if rank == 0:
                print(f"validation at step {step}: acc {acc:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
