"""Speech command classifier (small CRNN on log-mel frames) with DDP across two nodes, 2 processes each.
Launched by torchrun on every node; the interconnect interface comes from each node's profile."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

node = int(os.environ.get("GROUP_RANK", "0"))
print(f"[node{node}] local rank {os.environ['LOCAL_RANK']} init (GLOO_SOCKET_IFNAME={os.environ.get('GLOO_SOCKET_IFNAME')})",
      flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
print(f"[node{node} rank{rank}] process group up, world {world}", flush=True)


class CRNN(nn.Module):
    def __init__(self, n_mels=40, n_cls=12):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_mels, 96, 5, padding=2), nn.ReLU(), nn.Conv1d(96, 96, 5, padding=2), nn.ReLU())
        self.gru = nn.GRU(96, 96, batch_first=True)
        self.head = nn.Linear(96, n_cls)

    def forward(self, x):
        h = self.conv(x).transpose(1, 2)
        _, hn = self.gru(h)
        return self.head(hn[-1])


model = DDP(CRNN())
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in range(1, 401):
    y = torch.randint(0, 12, (32,), generator=g)
    x = torch.randn(32, 40, 49, generator=g) * 0.5
    x[torch.arange(32), y * 3] += 1.0
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"[node{node} rank{rank}] step {step}/400 loss {loss.item():.4f} {(time.time() - t0) * 50:.1f} ms/step",
              flush=True)
        t0 = time.time()
dist.destroy_process_group()
