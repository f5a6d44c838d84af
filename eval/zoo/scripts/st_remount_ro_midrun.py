import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64)))
    opt = torch.optim.Adam(model.parameters())
    ckpt_dir = "/mnt/shared/ckpt/exp12"
    if rank == 0:
        os.makedirs(ckpt_dir, exist_ok=True)
    for step in range(1, 601):
        x = torch.randn(32, 64)
        loss = (model(x) - x).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.02)
        if step % 50 == 0:
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step},
                           f"{ckpt_dir}/step_{step:06d}.pt")
                print(f"step {step} loss {loss.item():.4f} checkpoint saved", flush=True)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
