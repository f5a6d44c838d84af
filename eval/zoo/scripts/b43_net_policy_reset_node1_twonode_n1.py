"""Click-through-rate model (hashed feature embeddings + MLP) with DDP across two nodes, 2 processes per node, over
the nodes' data network (GLOO_SOCKET_IFNAME)."""
import datetime
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
node = int(os.environ["GROUP_RANK"])
torch.set_num_threads(1)
tag = f"[node{node} rank{rank}]"

FIELDS, BUCKETS, STEPS = 16, 20000, 400


class CTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(FIELDS * BUCKETS, 16)
        self.mlp = nn.Sequential(nn.Linear(FIELDS * 16, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(),
                                 nn.Linear(64, 1))

    def forward(self, ids):
        return self.mlp(self.emb(ids).flatten(1)).squeeze(1)


model = DDP(CTR())
opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
g = torch.Generator().manual_seed(rank)
offsets = torch.arange(FIELDS) * BUCKETS
print(f"{tag} host {socket.gethostname()} iface {os.environ.get('GLOO_SOCKET_IFNAME')}", flush=True)
t0 = time.time()
for step in range(1, STEPS + 1):
    ids = torch.randint(0, BUCKETS, (256, FIELDS), generator=g) + offsets
    clicks = (torch.rand(256, generator=g) < 0.1).float()
    loss = F.binary_cross_entropy_with_logits(model(ids), clicks)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"{tag} step {step}/{STEPS} logloss {loss.item():.4f} {(time.time() - t0) * 50:.1f} ms/step", flush=True)
        t0 = time.time()
print(f"{tag} done", flush=True)
dist.destroy_process_group()
