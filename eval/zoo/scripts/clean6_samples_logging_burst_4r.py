"""Four-rank MLP regression on molecular fingerprints; every rank logs throughput, and every 100 steps rank 0 dumps
per-parameter statistics (a burst of lines) for debugging."""
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, LOG_EVERY, STATS_EVERY, BATCH = 600, 20, 100, 64


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    layers = []
    for i, o in [(1024, 256), (256, 256), (256, 128), (128, 128), (128, 64)]:
        layers += [nn.Linear(i, o), nn.SiLU()]
    model = DDP(nn.Sequential(*layers, nn.Linear(64, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    w = torch.randn(1024, generator=torch.Generator().manual_seed(3)) / 32
    t = time.time()
    for step in range(1, STEPS + 1):
        x = (torch.rand(BATCH, 1024, generator=g) < 0.1).float()
        y = (x @ w).unsqueeze(1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % LOG_EVERY == 0:
            dt = time.time() - t
            print(f"[rank{rank}] step {step:4d}/{STEPS} | loss {loss.item():.5f} | {LOG_EVERY * BATCH / dt:8.1f} samples/s")
            t = time.time()
        if step % STATS_EVERY == 0 and rank == 0:
            for name, p in model.module.named_parameters():
                print(f"[rank0] stats step {step} {name:12s} shape {str(tuple(p.shape)):12s} "
                      f"|w| {p.norm():9.4f} |g| {p.grad.norm():9.6f} mean {p.mean():+.5f} std {p.std():.5f}")
                print(f"[rank0] stats step {step} {name:12s} adam exp_avg_sq max {opt.state[p]['exp_avg_sq'].max():.3e}")
    dist.barrier()
    print(f"[rank{rank}] finished {STEPS} steps, final loss {loss.item():.5f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
