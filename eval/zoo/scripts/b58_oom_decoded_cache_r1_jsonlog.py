"""Product-image embedding model (small conv net on 3x32x32 crops) on DDP, 4 ranks. Each rank reads its own shard of
JPEG-like crops; decoding is slow, so the Dataset keeps every decoded crop in a dict ("decode once, reuse in later
epochs"). Structured logging: one JSON object per line from every rank (the log shipper indexes them)."""
import datetime
import json
import logging
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

RANK = int(os.environ.get("RANK", "0"))


class JsonFormatter(logging.Formatter):
    def format(self, r):
        rec = {"ts": datetime.datetime.fromtimestamp(r.created, datetime.timezone.utc).isoformat(timespec="milliseconds"),
               "level": r.levelname, "logger": r.name, "rank": RANK, "pid": r.process, "msg": r.getMessage()}
        rec.update(getattr(r, "fields", {}))
        return json.dumps(rec)


h = logging.StreamHandler(sys.stdout)
h.setFormatter(JsonFormatter())
logging.basicConfig(level=logging.INFO, handlers=[h])
logging.captureWarnings(True)
log = logging.getLogger("embed.train")


class Crops(Dataset):
    def __init__(self, path):
        self.raw = np.load(path, mmap_mode="r")  # uint8 N x 3 x 32 x 32
        self.cache = {}

    def __len__(self):
        return len(self.raw)

    def __getitem__(self, i):
        if i not in self.cache:
            x = torch.from_numpy(np.asarray(self.raw[i], dtype=np.float32) / 255.0)
            x = (x - 0.45) / 0.225
            self.cache[i] = torch.cat([x, F.avg_pool2d(x[None], 2, 1, 1)[0, :, :32, :32]])  # + blurred copy, 6 ch
        return self.cache[i], i % 50


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
ds = Crops(f"crops/shard-{rank:03d}.npy")
log.info("dataset ready", extra={"fields": {"shard": f"crops/shard-{rank:03d}.npy", "n": len(ds), "world": world}})
loader = DataLoader(ds, batch_size=48, shuffle=True, num_workers=0, drop_last=True)
model = DDP(nn.Sequential(nn.Conv2d(6, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 50)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.5)
sched.step()  # "warm start" the schedule
step, t0 = 0, time.time()
for epoch in range(3):
    it = tqdm(loader, desc=f"epoch {epoch}", disable=rank != 0, mininterval=0.5)
    for x, y in it:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        if step % 10 == 0:
            log.info("train", extra={"fields": {"step": step, "epoch": epoch, "loss": round(loss.item(), 4),
                                                "lr": sched.get_last_lr()[0], "cached": len(ds.cache),
                                                "elapsed_s": round(time.time() - t0, 2)}})
        if step >= 360:
            break
log.info("finished", extra={"fields": {"steps": step}})
dist.destroy_process_group()
