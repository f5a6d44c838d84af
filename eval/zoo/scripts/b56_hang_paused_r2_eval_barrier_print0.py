"""Speech-commands classifier (1-D conv over log-mel frames) on DDP, 3 ranks. After every epoch each rank evaluates
its own validation slice (no collectives), the ranks meet at a barrier, then the per-rank counts are summed with one
all-reduce. Only rank 0 prints."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(), nn.Conv1d(64, 64, 5, padding=2), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(rank)


def batch(n):
    y = torch.randint(0, 12, (n,), generator=g)
    x = torch.randn(n, 40, 98, generator=g) * 0.5
    x[torch.arange(n), y * 3] += 1.0
    return x, y


val = [batch(128) for _ in range(12)]
for epoch in range(1, 4):
    t0 = time.time()
    model.train()
    for it in range(1, 41):
        x, y = batch(64)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and it % 20 == 0:
            print(f"epoch {epoch} iter {it}/40 loss {loss.item():.4f}", flush=True)
    if rank == 0:
        print(f"epoch {epoch} train done in {time.time() - t0:.1f}s, evaluating", flush=True)
    model.eval()
    correct = torch.zeros(2)
    with torch.no_grad():
        for x, y in val:
            correct += torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)])
    dist.barrier()
    dist.all_reduce(correct)
    if rank == 0:
        print(f"epoch {epoch} val acc {correct[0] / correct[1]:.4f} ({int(correct[1])} clips)", flush=True)
if rank == 0:
    print("done", flush=True)
dist.destroy_process_group()
