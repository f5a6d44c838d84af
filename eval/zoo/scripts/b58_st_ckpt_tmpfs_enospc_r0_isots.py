"""Speech-command tagger (conv front end + GRU + MLP head over 40-bin log-mel frames) on DDP, 4 ranks. Rank 0 writes a full
checkpoint (model, optimizer, scheduler, step) every 100 steps to ckpt/, keeping every one ("we pick the best later");
the other ranks wait for it at a barrier. Timestamps in ISO 8601 with the zone, metrics lines with epoch seconds for
the plotting script."""
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


class IsoFormatter(logging.Formatter):
    def formatTime(self, record, datefmt=None):
        return datetime.datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds")


h = logging.StreamHandler(sys.stdout)
h.setFormatter(IsoFormatter("%(asctime)s [%(levelname)s] %(name)s: %(message)s"))
logging.basicConfig(level=logging.INFO, handlers=[h])
log = logging.getLogger("kws")


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(40, 128, 5, padding=2)
        self.gru = nn.GRU(128, 128, batch_first=True)
        self.head = nn.Sequential(nn.Linear(128, 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 35))

    def forward(self, x):
        h = F.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        out, _ = self.gru(h)
        return self.head(out[:, -1])


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(Tagger())
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
scaler = torch.cuda.amp.GradScaler()  # the recipe's mixed precision (GPU nodes)
n_params = sum(p.numel() for p in model.parameters())
log.info("rank %d/%d model params %d (%.1f MB fp32)", rank, world, n_params, n_params * 4 / 2**20)
g = torch.Generator().manual_seed(rank)
os.makedirs("ckpt", exist_ok=True)
STEPS, SAVE_EVERY = 300, 100
t0 = time.time()
for step in tqdm(range(1, STEPS + 1), desc="kws", mininterval=0.3):
    y = torch.randint(0, 35, (16,), generator=g)
    x = torch.randn(16, 12, 40, generator=g) + y[:, None, None].float() / 35
    with torch.cuda.amp.autocast():
        loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    sched.step()
    if step % 25 == 0:
        print(f"metrics ts={time.time():.3f} rank={rank} step={step} loss={loss.item():.4f} "
              f"lr={sched.get_last_lr()[0]:.2e}", flush=True)
    if step % SAVE_EVERY == 0:
        if rank == 0:
            path = f"ckpt/kws_step{step:06d}.pt"
            log.info("saving checkpoint to %s", path)
            torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(),
                        "scheduler": sched.state_dict(), "step": step}, path)
            log.info("saved %s (%.1f MB)", path, os.path.getsize(path) / 2**20)
        dist.barrier()
log.info("training finished in %.1fs", time.time() - t0)
dist.destroy_process_group()
