"""Keyword-spotting CRNN-lite with DDP on 2 processes, launched with python -m torch.distributed.run. Every step
prints one timing line per rank (the team's dashboard scrapes them)."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank = dist.get_rank()
torch.set_num_threads(1)


class CRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(40, 128, 3, padding=1), nn.ReLU(), nn.Conv1d(128, 128, 3, padding=1),
                                  nn.ReLU())
        self.gru = nn.GRU(128, 128, batch_first=True)
        self.out = nn.Linear(128, 12)

    def forward(self, x):
        h, _ = self.gru(self.conv(x).transpose(1, 2))
        return self.out(h[:, -1])


model = DDP(CRNN())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
STEPS = 300
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    x = torch.randn(32, 40, 50, generator=g)
    y = torch.randint(0, 12, (32,), generator=g)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"[rank{rank}] step {step}/{STEPS} loss {loss.item():.4f} step_ms {(time.perf_counter() - t0) * 1000:.1f}",
          flush=True)
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
