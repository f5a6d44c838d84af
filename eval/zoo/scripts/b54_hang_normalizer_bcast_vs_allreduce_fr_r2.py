"""Click-through model on DDP, 3 ranks. Inputs go through a running feature normalizer (mean / variance over the
rows seen so far). Every 25 steps the ranks sync the normalizer: while it is still warming up its statistics are
averaged across ranks; once a rank has seen FREEZE_ROWS valid rows the normalizer is frozen and rank 0's copy is the
reference, broadcast to the others. Rows are padded batches from each rank's request log (padding masked out).
Flight Recorder is on; each rank writes its trace when a collective fails."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
FREEZE_ROWS = 20_000


class RunningNormalizer:
    def __init__(self, dim):
        self.count, self.mean, self.var = 0, torch.zeros(dim), torch.ones(dim)
        self.frozen = False

    def update(self, x):
        if self.frozen:
            return
        n = len(x)
        m, v = x.mean(0), x.var(0, unbiased=False)
        tot = self.count + n
        delta = m - self.mean
        self.mean = self.mean + delta * n / tot
        self.var = (self.var * self.count + v * n + delta ** 2 * self.count * n / tot) / tot
        self.count = tot
        if self.count >= FREEZE_ROWS:
            self.frozen = True
            print(f"rank{rank}: normalizer frozen after {self.count} rows", flush=True)

    def sync(self):
        stats = torch.cat([self.mean, self.var])
        if self.frozen:
            dist.broadcast(stats, src=0)  # rank 0's frozen copy is the reference
        else:
            dist.all_reduce(stats)
            stats /= world
        self.mean, self.var = stats.chunk(2)

    def __call__(self, x):
        return (x - self.mean) / (self.var.sqrt() + 1e-5)


log = torch.load(f"data/requests-{rank}.pt")
print(f"rank{rank}: request log data/requests-{rank}.pt: {int(log['mask'].sum())} valid rows of {len(log['mask'])}",
      flush=True)
norm = RunningNormalizer(40)
model = DDP(nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
BATCH, STEPS = 256, 300


def dump_trace():
    os.makedirs("fr", exist_ok=True)
    path = f"fr/rank{rank}.fr.pkl"
    with open(path, "wb") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace())
    print(f"rank{rank}: wrote flight recorder dump {path}", flush=True)


try:
    for step in range(1, STEPS + 1):
        lo = ((step - 1) * BATCH) % len(log["x"])
        x, y, m = (log[k][lo:lo + BATCH] for k in ("x", "y", "mask"))
        x, y = x[m], y[m]
        norm.update(x)
        loss = F.binary_cross_entropy_with_logits(model(norm(x)).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            norm.sync()
            print(f"rank{rank}: step {step}/{STEPS} loss {loss.item():.4f} normalizer rows {norm.count}"
                  f"{' (frozen)' if norm.frozen else ''}", flush=True)
except Exception:
    dump_trace()
    raise
print(f"rank{rank}: finished", flush=True)
dist.destroy_process_group()
