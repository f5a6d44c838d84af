"""Surface-defect classifier (MLP on 96-d patch embeddings) on DDP, 4 ranks. Every 250 steps each rank scores its
slice of the validation set (val[rank::world]) and logs per-class recall; the slices are merged on the dashboard.
Coloured logging, a tqdm bar per process, mixed precision settings copied from the GPU version of the script."""
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
from tqdm import tqdm

CLASSES = ["ok", "scratch", "dent", "stain", "chip", "burr", "warp", "crack_hairline"]
STEPS, EVAL_EVERY, BATCH = 400, 250, 64


class ColorFormatter(logging.Formatter):
    COLORS = {"DEBUG": "\033[36m", "INFO": "\033[32m", "WARNING": "\033[33m", "ERROR": "\033[1;31m"}

    def format(self, record):
        record.levelname = f"{self.COLORS.get(record.levelname, '')}{record.levelname:<7}\033[0m"
        return super().format(record)


handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(ColorFormatter("\033[2m%(asctime)s\033[0m %(levelname)s \033[35m%(name)s\033[0m  %(message)s"))
log = logging.getLogger("defects.train")
log.addHandler(handler)
log.setLevel(logging.INFO)

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
log.info("process group up: world_size=%d backend=gloo host=%s", world, os.uname().nodename)

val = torch.load("data/val_embeddings.pt")
vx, vy = val["x"][rank::world], val["y"][rank::world]  # this rank's slice of the validation set
log.info("validation slice: %d patches", len(vy))

model = DDP(nn.Sequential(nn.Linear(96, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, len(CLASSES))))
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)
scaler = torch.cuda.amp.GradScaler(enabled=True)  # from the A100 config
centers = torch.randn(len(CLASSES), 96, generator=torch.Generator().manual_seed(7)) * 1.5
g = torch.Generator().manual_seed(100 + rank)


def batch():
    y = torch.multinomial(torch.tensor([40., 10, 10, 8, 8, 6, 6, 0.5]), BATCH, replacement=True, generator=g)
    return centers[y] + torch.randn(BATCH, 96, generator=g), y


def per_class_recall():
    model.eval()
    with torch.no_grad():
        pred = model.module(vx).argmax(1)
    model.train()
    correct = [0] * len(CLASSES)
    support = [0] * len(CLASSES)
    for p, t in zip(pred.tolist(), vy.tolist()):
        support[t] += 1
        correct[t] += int(p == t)
    return {name: correct[c] / support[c] for c, name in enumerate(CLASSES)}


t0 = time.time()
pbar = tqdm(range(1, STEPS + 1), desc=f"train", dynamic_ncols=True, mininterval=0.25)
for step in pbar:
    x, y = batch()
    with torch.cuda.amp.autocast():
        loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    sched.step()
    pbar.set_postfix(loss=f"{loss.item():.4f}", lr=f"{sched.get_last_lr()[0]:.2e}")
    if step % 50 == 0:
        log.info("step %d/%d loss %.4f lr %.3e elapsed %.1fs", step, STEPS, loss.item(), sched.get_last_lr()[0],
                 time.time() - t0)
    if step % EVAL_EVERY == 0:
        recall = per_class_recall()
        log.info("val recall @%d: %s", step, " ".join(f"{k}={v:.3f}" for k, v in recall.items()))
pbar.close()
log.info("done in %.1fs", time.time() - t0)
dist.destroy_process_group()
