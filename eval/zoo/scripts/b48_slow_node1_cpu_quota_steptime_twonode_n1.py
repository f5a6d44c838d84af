"""Click-through-rate model (embedding bag over hashed features + MLP) on DDP across two nodes, 2 processes per node.
Every rank logs its own timing every 20 steps: the window's mean step time and its data / forward-backward / optimizer
parts (DDP's gradient all-reduce runs inside backward)."""
import datetime
import logging
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
logging.basicConfig(level=logging.INFO,
                    format=f"%(asctime)s node{node} rank{rank} %(levelname)s %(message)s")
log = logging.getLogger("ctr")
torch.manual_seed(0)
torch.set_num_threads(1)


class CTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(2 ** 16, 32, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(32 + 13, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, ids, offsets, dense):
        return self.mlp(torch.cat([self.emb(ids, offsets), dense], 1)).squeeze(1)


model = DDP(CTR())
opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
g = torch.Generator().manual_seed(rank)
log.info("host %s, %d ranks, batch 1024", socket.gethostname(), world)
STEPS, WIN = 240, 20
acc = {"data": 0.0, "fwd_bwd": 0.0, "opt": 0.0}
t_win = time.perf_counter()
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    ids = torch.randint(0, 2 ** 16, (1024 * 26,), generator=g)
    offsets = torch.arange(0, 1024 * 26, 26)
    dense = torch.randn(1024, 13, generator=g)
    y = (dense[:, 0] + 0.1 * torch.randn(1024, generator=g) > 0).float()
    t1 = time.perf_counter()
    loss = F.binary_cross_entropy_with_logits(model(ids, offsets, dense), y)
    opt.zero_grad()
    loss.backward()
    t2 = time.perf_counter()
    opt.step()
    t3 = time.perf_counter()
    acc["data"] += t1 - t0
    acc["fwd_bwd"] += t2 - t1
    acc["opt"] += t3 - t2
    if step % WIN == 0:
        now = time.perf_counter()
        log.info("step %d/%d loss %.4f step_time %.1fms data %.1fms fwd_bwd %.1fms opt %.1fms", step, STEPS,
                 loss.item(), 1000 * (now - t_win) / WIN, *(1000 * acc[k] / WIN for k in ("data", "fwd_bwd", "opt")))
        acc = dict.fromkeys(acc, 0.0)
        t_win = now
dist.barrier()
if rank == 0:
    log.info("training finished: %d steps", STEPS)
dist.destroy_process_group()
