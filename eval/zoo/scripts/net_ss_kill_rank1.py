import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256)))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    t0 = time.time()
    for step in range(1, 2001):
        x = torch.randn(64, 256)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f} elapsed {time.time() - t0:.1f}s", flush=True)
        time.sleep(0.02)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
