"""Load forecasting model (MLP on 24 lagged meter readings) on DDP, 4 ranks. The exports live under data/<region>/
(one CSV part per rank, written by the utilities' export job); rows are parsed lazily in the Dataset. glog-style
logging, as the team's C++ ingestion services log; a progress bar per process."""
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
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm


class GlogFormatter(logging.Formatter):
    def format(self, r):
        t = time.localtime(r.created)
        head = "%s%02d%02d %02d:%02d:%02d.%06d %7d %s:%d] " % (
            r.levelname[0], t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, int(r.created % 1 * 1e6),
            r.process, r.filename, r.lineno)
        return head + r.getMessage()


h = logging.StreamHandler(sys.stderr)
h.setFormatter(GlogFormatter())
logging.basicConfig(level=logging.INFO, handlers=[h])
log = logging.getLogger("loadfc")


class MeterRows(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.header = f.readline().strip().split(",")
            self.lines = f.readlines()

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        vals = [float(v) for v in self.lines[i].strip().split(",")[1:]]  # first column: meter id
        return torch.tensor(vals[:-1]), torch.tensor(vals[-1:])


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
region = sorted(os.listdir("data"))[0]
part = os.path.join("data", region, f"part-{rank:05d}.csv")
ds = MeterRows(part)
log.info("rank %d/%d reading %s (%d rows)", rank, world, part, len(ds))
loader = DataLoader(ds, batch_size=8, shuffle=False, num_workers=1)
model = DDP(nn.Sequential(nn.Linear(24, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
t0 = time.time()
for step, (x, y) in enumerate(tqdm(loader, desc=f"load-fc", mininterval=0.3), 1):
    with torch.cuda.amp.autocast():  # same code path as the GPU nodes
        loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        log.info("step %d loss %.5f rows %d %.1f rows/s", step, loss.item(), step * 8, step * 8 / (time.time() - t0))
    if step % 100 == 0 and rank == 0:
        print(f"[{time.time():.3f}] checkpoint-free run, step {step}, region {region}", flush=True)
log.info("epoch done: %d steps", step)
dist.destroy_process_group()
