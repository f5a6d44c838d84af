"""Query-intent classifier (bag-of-ngrams MLP) on DDP, 4 ranks, 500 steps. glog-style log lines from every rank (the
serving team's format), a tqdm bar on rank 0, and a metrics line with epoch seconds every 50 steps."""
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


class GlogFormatter(logging.Formatter):
    def format(self, r):
        t = time.localtime(r.created)
        return "%s%02d%02d %02d:%02d:%02d.%06d %7d %s:%d] %s" % (
            r.levelname[0], t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, int(r.created % 1 * 1e6),
            r.process, r.filename, r.lineno, r.getMessage())


h = logging.StreamHandler(sys.stderr)
h.setFormatter(GlogFormatter())
logging.basicConfig(level=logging.INFO, handlers=[h])
logging.captureWarnings(True)
log = logging.getLogger("intent")

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.EmbeddingBag(5000, 64), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 24)))
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=5e-3, total_steps=500)
scaler = torch.cuda.amp.GradScaler()
log.info("rank %d of %d ready, pid %d", rank, world, os.getpid())
g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in tqdm(range(1, 501), disable=rank != 0, desc="intent", mininterval=0.3):
    ids = torch.randint(0, 5000, (64, 12), generator=g)
    y = ids[:, 0] % 24
    loss = F.cross_entropy(model(ids), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    sched.step()
    if step % 20 == 0:
        log.info("step %d loss %.4f lr %.2e", step, loss.item(), sched.get_last_lr()[0])
    if step % 50 == 0:
        print(f"metric ts={time.time():.3f} rank={rank} step={step} ex_per_s={step * 64 / (time.time() - t0):.0f}",
              flush=True)
log.info("done")
dist.destroy_process_group()
