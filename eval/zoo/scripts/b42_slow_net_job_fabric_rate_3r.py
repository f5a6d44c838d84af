"""Two-tower retrieval model (large embedding tables, dense gradients), DDP with 3 ranks. The step log prints the
step time and the time spent in the gradient all-reduce (measured with a DDP communication hook)."""
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


class TwoTower(nn.Module):
    def __init__(self, users=40000, items=40000, d=64):
        super().__init__()
        self.user = nn.Embedding(users, d)
        self.item = nn.Embedding(items, d)
        self.uq = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))

    def forward(self, u, i):
        return self.uq(self.user(u)) @ self.item(i).T


comm_ms = [0.0]


def timed_allreduce(state, bucket):
    t = time.time()
    fut = dist.all_reduce(bucket.buffer() / dist.get_world_size(), async_op=True).get_future()

    def done(f):
        comm_ms[0] += (time.time() - t) * 1000
        return f.value()[0]

    return fut.then(done)


model = DDP(TwoTower(), bucket_cap_mb=25)
model.register_comm_hook(None, timed_allreduce)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
print(f"rank {rank}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M params (dense grads)", flush=True)
t0 = time.time()
for step in range(1, 361):
    u = torch.randint(0, 40000, (128,), generator=g)
    i = torch.randint(0, 40000, (128,), generator=g)
    loss = F.cross_entropy(model(u, i), torch.arange(128))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"rank {rank} step {step}/360 loss {loss.item():.4f} step_ms {(time.time() - t0) * 50:.1f} "
              f"allreduce_ms {comm_ms[0] / 20:.1f}", flush=True)
        t0, comm_ms[0] = time.time(), 0.0
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
