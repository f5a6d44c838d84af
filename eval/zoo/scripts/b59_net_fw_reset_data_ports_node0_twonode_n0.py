"""Handwriting line recogniser (small conv encoder + linear CTC head) on DDP, 2 nodes x 2 processes.
Prints 'ep E it N ...' per rank every 25 iterations."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
host = f"n{os.environ.get('GROUP_RANK', '0')}"
torch.set_num_threads(1)
torch.manual_seed(7)
enc = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                    nn.ReLU(), nn.MaxPool2d((4, 1)))
model = DDP(nn.ModuleDict({"enc": enc, "head": nn.Linear(64 * 4, 80)}))
opt = torch.optim.Adam(model.parameters(), lr=5e-4)
g = torch.Generator().manual_seed(rank)
ITERS = 150
for ep in range(3):
    t = time.time()
    for it in range(1, ITERS + 1):
        img = torch.rand(16, 1, 32, 128, generator=g)
        tgt = torch.randint(1, 80, (16, 12), generator=g)
        f = model.module["enc"](img)                      # (B, 64, 4, 64)
        f = f.flatten(1, 2).transpose(1, 2)               # (B, 64, 256)
        logp = F.log_softmax(model.module["head"](f), -1).transpose(0, 1)
        loss = F.ctc_loss(logp, tgt, torch.full((16,), 64), torch.full((16,), 12))
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():  # gradients averaged across the job
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        opt.step()
        if it % 25 == 0:
            print(f"{host}:{rank} ep {ep} it {it}/{ITERS} ctc {loss.item():.3f} ({(time.time() - t) / 25:.3f}s/it)", flush=True)
            t = time.time()
dist.destroy_process_group()
