"""Sentence-pair classifier fine-tuning (frozen embedding bag + trainable head) on DDP, two nodes, torchrun on each
node started over pdsh."""
import datetime
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

rank = int(os.environ["RANK"])
print(f"rank {rank} local_rank {os.environ['LOCAL_RANK']} on {os.environ.get('HOSTNAME', socket.gethostname())}: "
      f"init_process_group(gloo)", flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
world = dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
emb = nn.EmbeddingBag(30000, 256, mode="mean")
emb.requires_grad_(False)
head = DDP(nn.Sequential(nn.Linear(512, 256), nn.Tanh(), nn.Linear(256, 3)))
opt = torch.optim.AdamW(head.parameters(), lr=2e-4)
g = torch.Generator().manual_seed(rank)
for step in range(1, 301):
    a = torch.randint(0, 30000, (32, 24), generator=g)
    b = torch.randint(0, 30000, (32, 24), generator=g)
    y = torch.randint(0, 3, (32,), generator=g)
    loss = F.cross_entropy(head(torch.cat([emb(a), emb(b)], 1)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
