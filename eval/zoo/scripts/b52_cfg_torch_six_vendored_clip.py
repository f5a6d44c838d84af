"""Speaker-embedding trainer (x-vector style TDNN) on DDP. Gradient clipping comes from the group's shared
utilities (utils/optim_utils.py, vendored from the lab's older training codebase)."""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from utils.optim_utils import clip_grad_norm_fp32

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)

model = DDP(nn.Sequential(nn.Conv1d(40, 128, 5), nn.ReLU(), nn.Conv1d(128, 128, 3, dilation=2), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(128, 64)))
head = nn.Linear(64, 200)
opt = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(rank)
for step in range(100):
    x = torch.randn(32, 40, 200, generator=g)
    y = torch.randint(0, 200, (32,), generator=g)
    loss = F.cross_entropy(head(model(x)), y)
    opt.zero_grad()
    loss.backward()
    norm = clip_grad_norm_fp32(list(model.parameters()), max_norm=5.0)
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f} grad_norm {norm:.3f}", flush=True)
dist.destroy_process_group()
