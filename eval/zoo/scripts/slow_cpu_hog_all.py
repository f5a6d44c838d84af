import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DDP(nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    t_last = time.perf_counter()
    for step in range(1, 301):
        x = torch.randn(64, 512)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            now = time.perf_counter()
            if rank == 0:
                print(f"step {step} loss {loss.item():.4f} time_ms {(now - t_last) * 100:.1f}", flush=True)
            t_last = now
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
