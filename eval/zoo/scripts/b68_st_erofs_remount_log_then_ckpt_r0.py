"""Click-through-rate model on DDP, 3 ranks. Rank 0 keeps the run's log file and checkpoints on the team's run
volume (/mnt/b68_runs, a block volume attached to the node) and also logs to the console."""
import datetime
import logging
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

RUN_DIR = "/mnt/b68_runs/ctr-dcn-0612"
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
log = logging.getLogger("ctr")
log.setLevel(logging.INFO)
fmt = logging.Formatter(f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
console = logging.StreamHandler(sys.stdout)
console.setFormatter(fmt)
log.addHandler(console)
if rank == 0:
    os.makedirs(RUN_DIR, exist_ok=True)
    fh = logging.FileHandler(f"{RUN_DIR}/train.log")
    fh.setFormatter(fmt)
    log.addHandler(fh)

model = DDP(nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
log.info("training 200 steps, run dir %s", RUN_DIR)
for step in range(1, 201):
    x = torch.randn(256, 64, generator=g)
    y = (x[:, :3].sum(1) > 0.5).float()
    loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        log.info("step %d/200 loss %.4f", step, loss.item())
    if step % 40 == 0:
        if rank == 0:
            path = f"{RUN_DIR}/ckpt-step{step:04d}.pt"
            torch.save({"step": step, "model": model.module.state_dict(), "optim": opt.state_dict()}, path)
            log.info("checkpoint saved: %s", path)
        dist.barrier()
log.info("done")
dist.destroy_process_group()
