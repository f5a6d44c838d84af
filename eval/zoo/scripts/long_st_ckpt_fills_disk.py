import glob
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logger = logging.getLogger("train")
CKPT_DIR = "/mnt/nfs/ckpt/exp7"


def save_checkpoint(model, opt, step):
    os.makedirs(CKPT_DIR, exist_ok=True)
    path = f"{CKPT_DIR}/step_{step:06d}.pt"
    torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step}, path)
    logger.info("saved %s (%.1f MB)", path, os.path.getsize(path) / 2**20)
    ckpts = sorted(glob.glob(f"{CKPT_DIR}/step_*.pt"))
    for old in ckpts[:-3]:  # keep the last 3
        os.remove(old)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    logging.basicConfig(format=f"[%(asctime)s][rank {rank}][%(levelname)s] %(message)s", level=logging.INFO)
    model = DDP(nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 501):
        x = torch.randn(32, 256)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        logger.info("step %d loss %.4f elapsed %.1fs", step, loss.item(), time.time() - t0)
        if step % 50 == 0 and rank == 0:
            save_checkpoint(model.module, opt, step)
        if step % 50 == 0:
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
