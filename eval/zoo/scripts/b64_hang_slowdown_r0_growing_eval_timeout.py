"""Fraud scorer (MLP) on DDP, 3 ranks. Every 20 steps rank 0 scores the hard-example pool (validation
transactions), reports the pool's exact pairwise AUC, and mines the pool: every example the model is unsure
about (|logit| < 2) goes back into the pool so that the next evaluation looks at it again. The other ranks wait
at a barrier meanwhile."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
gv = torch.Generator().manual_seed(99)
pool_x = torch.randn(4800, 32, generator=gv)
pool_y = (pool_x[:, :2].sum(1) > 1).float()


def pairwise_auc(scores, labels):
    pos, neg = scores[labels == 1], scores[labels == 0]
    hits = 0.0
    for i in range(0, len(pos), 256):
        hits += (pos[i:i + 256, None] > neg[None, :]).sum().item()
    return hits / max(len(pos) * len(neg), 1)


g = torch.Generator().manual_seed(rank)
t_last = time.time()
for step in range(1, 1001):
    x = torch.randn(256, 32, generator=g)
    y = (x[:, :2].sum(1) > 1).float()
    loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        if rank == 0:
            t0 = time.time()
            with torch.no_grad():
                s = model.module(pool_x).squeeze(1)
            a = pairwise_auc(s, pool_y)
            hard = s.abs() < 2
            pool_x, pool_y = torch.cat([pool_x, pool_x[hard]]), torch.cat([pool_y, pool_y[hard]])
            print(f"[rank0] step {step} pool_auc {a:.4f} pool {len(pool_y)} (+{int(hard.sum())} hard) "
                  f"eval {time.time() - t0:.2f}s", flush=True)
        dist.barrier()
        now = time.time()
        print(f"[rank{rank}] step {step} loss {loss.item():.4f} {(now - t_last) / 20:.3f} s/it", flush=True)
        t_last = now
dist.destroy_process_group()
