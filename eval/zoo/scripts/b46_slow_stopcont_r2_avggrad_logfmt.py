"""Tabular churn model (a small residual MLP) on 3 ranks with synchronous data parallelism as in PyTorch's distributed
tutorial (average_gradients: one all-reduce per parameter after backward); DataLoader over an in-memory shard per
rank. Each rank logs its own timing breakdown every 20 iterations in logfmt (means over the window, ms): data,
forward, backward, gradient sync and optimizer."""
import datetime
import logging
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"time=%(asctime)s level=%(levelname)s rank={rank} %(message)s")
log = logging.getLogger("churn")
torch.set_num_threads(1)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1, self.fc2, self.norm = nn.Linear(d, 2 * d), nn.Linear(2 * d, d), nn.LayerNorm(d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


def average_gradients(model):
    size = float(dist.get_world_size())
    for param in model.parameters():
        dist.all_reduce(param.grad.data, op=dist.ReduceOp.SUM)
        param.grad.data /= size


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), Block(256), nn.Linear(256, 2))
opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
g = torch.Generator().manual_seed(rank)
x = torch.randn(40000, 64, generator=g)
y = (x[:, :5].sum(1) > 0).long()
loader = DataLoader(TensorDataset(x, y), batch_size=1024, shuffle=True, generator=g, drop_last=True)
ITERS, LOG = 160, 20
log.info('msg="starting" world=%d iters=%d batch=1024', world, ITERS)
acc = dict.fromkeys(("data", "fwd", "bwd", "sync", "opt", "step"), 0.0)
it, batches = 0, iter(loader)
while it < ITERS:
    t0 = time.perf_counter()
    try:
        xb, yb = next(batches)
    except StopIteration:  # next epoch
        batches = iter(loader)
        xb, yb = next(batches)
    t1 = time.perf_counter()
    loss = F.cross_entropy(model(xb), yb)
    t2 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    t3 = time.perf_counter()
    average_gradients(model)
    t4 = time.perf_counter()
    opt.step()
    t5 = time.perf_counter()
    it += 1
    for k, v in (("data", t1 - t0), ("fwd", t2 - t1), ("bwd", t3 - t2), ("sync", t4 - t3), ("opt", t5 - t4),
                 ("step", t5 - t0)):
        acc[k] += v
    if it % LOG == 0:
        m = {k: 1000 * v / LOG for k, v in acc.items()}
        log.info("it=%d loss=%.4f step_ms=%.1f data_ms=%.1f fwd_ms=%.1f bwd_ms=%.1f sync_ms=%.1f opt_ms=%.1f", it,
                 loss.item(), m["step"], m["data"], m["fwd"], m["bwd"], m["sync"], m["opt"])
        acc = dict.fromkeys(acc, 0.0)
dist.barrier()
log.info('msg="training complete" iters=%d', ITERS)
dist.destroy_process_group()
