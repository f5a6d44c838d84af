"""Recommendation tower (embedding + MLP) on DDP, 3 ranks, checkpointed with torch.distributed.checkpoint (DCP) on the
shared volume (shared/ckpt/). Before resuming, local rank 0 stages the checkpoint to node-local scratch (faster reads
for every rank), then every rank loads from scratch."""
import datetime
import glob
import os
import shutil
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel as DDP

SHARED = "shared/ckpt"
SCRATCH = "scratch/ckpt"
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
local_rank = int(os.environ["LOCAL_RANK"])
torch.set_num_threads(1)


def log(msg):
    print(f"{time.strftime('%H:%M:%S')} [rank {rank}] {msg}", flush=True)


def stage(tag):
    """copy shared/ckpt/<tag> to node-local scratch (once per node)"""
    src, dst = f"{SHARED}/{tag}", f"{SCRATCH}/{tag}"
    if local_rank == 0:
        os.makedirs(dst, exist_ok=True)
        files = glob.glob(f"{src}/*")
        for f in files:
            shutil.copy2(f, dst)
        log(f"staged {len(files)} files {src} -> {dst}")
    dist.barrier()
    return dst


model = DDP(nn.Sequential(nn.Embedding(20000, 32), nn.Flatten(), nn.Linear(32 * 8, 256), nn.ReLU(),
                          nn.Linear(256, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
tag = open(f"{SHARED}/latest").read().strip()
path = stage(tag)
msd, osd = get_state_dict(model, opt)
state = {"model": msd, "optim": osd, "step": 0}
log(f"loading {path}")
dcp.load(state, checkpoint_id=path)
set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
step0 = state["step"]
log(f"resumed at step {step0}")
g = torch.Generator().manual_seed(rank)
for step in range(step0 + 1, step0 + 201):
    x = torch.randint(0, 20000, (128, 8), generator=g)
    y = (x[:, 0] % 7 == 0).float()
    loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        log(f"step {step} loss {loss.item():.4f}")
dist.destroy_process_group()
