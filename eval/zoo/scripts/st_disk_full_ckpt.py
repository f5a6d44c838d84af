import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT_DIR = os.environ.get("CKPT_DIR", "/mnt/ckpt")


def save_checkpoint(model, opt, step):
    path = os.path.join(CKPT_DIR, f"step_{step:06d}.pt")
    torch.save({"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step}, path)
    print(f"saved {path}", flush=True)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    for step in range(1, 201):
        x = torch.randn(16, 256)
        loss = nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            if rank == 0:
                save_checkpoint(model, opt, step)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
