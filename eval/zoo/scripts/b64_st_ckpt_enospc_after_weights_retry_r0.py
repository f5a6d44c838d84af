"""Speech-command classifier fine-tuned from the team's pretrained encoder, DDP on 3 ranks. The encoder weights
live on the shared assets mount; loading retries because that mount is sometimes late on a fresh node. Rank 0
writes a full checkpoint (model + optimizer) to /mnt/b64_ckpt every 25 steps."""
import datetime
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT_DIR = "/mnt/b64_ckpt/kws"

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s [%(levelname)s] rank{rank}: %(message)s")
log = logging.getLogger("kws")
torch.set_num_threads(1)


def load_with_retry(path, attempts=5, wait=2.0):
    for i in range(1, attempts + 1):
        try:
            sd = torch.load(path)
            if i > 1:
                log.info("loaded %s on attempt %d", path, i)
            return sd
        except (FileNotFoundError, OSError) as e:
            if i == attempts:
                raise
            log.warning("attempt %d/%d to load %s failed: %s; retrying in %.0fs", i, attempts, path, e, wait)
            time.sleep(wait)


encoder = nn.Sequential(nn.Linear(40 * 16, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU())
encoder.load_state_dict(load_with_retry("assets/encoder-v3.pt"))
model = DDP(nn.Sequential(encoder, nn.Linear(512, 35)))
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
g = torch.Generator().manual_seed(rank)
os.makedirs(CKPT_DIR, exist_ok=True)
for step in range(1, 201):
    x = torch.randn(64, 40 * 16, generator=g)
    y = torch.randint(0, 35, (64,), generator=g)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        log.info("step %d loss %.4f", step, loss.item())
    if step % 25 == 0:
        if rank == 0:
            path = f"{CKPT_DIR}/step{step:05d}.pt"
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, path)
            log.info("checkpoint saved to %s (%.1f MB)", path, os.path.getsize(path) / 1e6)
        dist.barrier()
dist.destroy_process_group()
