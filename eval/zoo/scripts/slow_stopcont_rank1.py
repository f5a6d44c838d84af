import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    fwd_bwd = 0.0
    t_last = time.perf_counter()
    for step in range(1, 401):
        t = time.perf_counter()
        x = torch.randn(32, 256)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        fwd_bwd += time.perf_counter() - t
        time.sleep(0.04)  # simulated data loading
        if step % 20 == 0:
            now = time.perf_counter()
            print(f"[rank {rank}] step {step} loss {loss.item():.4f} time_ms {(now - t_last) * 50:.1f} "
                  f"compute_ms {fwd_bwd * 50:.1f}", flush=True)
            t_last, fwd_bwd = now, 0.0
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
