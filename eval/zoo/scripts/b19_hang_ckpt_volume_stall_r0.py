"""Image-patch autoencoder, DDP over gloo; rank 0 writes a checkpoint to the shared checkpoint volume every 200 steps
(fsync'd so a preemption never leaves a torn file), the other ranks wait for it at a barrier."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s [%(levelname)s] rank%(rank)s: %(message)s", level=logging.INFO)
RANK = int(os.environ["RANK"])
log = logging.LoggerAdapter(logging.getLogger(__name__), {"rank": RANK})
CKPT_DIR = "checkpoints/ae-run7"


def save(model, opt, step):
    path = f"{CKPT_DIR}/step{step:06d}.pt"
    t = time.time()
    with open(path + ".tmp", "wb") as f:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)
    log.info("saved %s in %.2fs", path, time.time() - t)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    os.makedirs(CKPT_DIR, exist_ok=True)
    torch.manual_seed(RANK)
    model = DDP(nn.Sequential(nn.Linear(768, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 256),
                              nn.ReLU(), nn.Linear(256, 768)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 2001):
        x = torch.rand(64, 768)
        loss = nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.5f (%.1f steps/s)", step, loss.item(), step / (time.time() - t0))
        if step % 200 == 0:
            if RANK == 0:
                log.info("saving checkpoint at step %d", step)
                save(model.module, opt, step)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
