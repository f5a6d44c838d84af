"""Next-basket recommender (item embeddings + 2-layer transformer encoder over the last 16 items) on DDP, 4 ranks.
Rank 0 logs JSON lines for the experiment tracker (ISO timestamps); the other ranks print a short progress line; every process shows a tqdm bar;
every process prints the start-up warnings of the mixed-precision code copied from the GPU recipe."""
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm


class Basket(nn.Module):
    def __init__(self, n_items=5000, d=64):
        super().__init__()
        self.emb = nn.Embedding(n_items, d)
        layer = nn.TransformerEncoderLayer(d, 4, 128, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.out = nn.Linear(d, n_items)

    def forward(self, seq):
        return self.out(self.enc(self.emb(seq))[:, -1])


def jlog(**kw):
    print(json.dumps({"time": datetime.datetime.now(datetime.timezone.utc).isoformat(), **kw}), flush=True)


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(Basket())
opt = torch.optim.Adam(model.parameters(), lr=5e-4)
scaler = torch.cuda.amp.GradScaler()
g = torch.Generator().manual_seed(rank)
if rank == 0:
    jlog(event="start", world_size=world, params=sum(p.numel() for p in model.parameters()))
t0 = time.time()
for step in tqdm(range(1, 401), desc="basket", mininterval=0.3):
    seq = torch.randint(0, 5000, (32, 16), generator=g)
    target = (seq[:, -1] * 7 + 3) % 5000
    with torch.cuda.amp.autocast():
        loss = F.cross_entropy(model(seq), target)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    if step % 10 == 0:
        if rank == 0:
            jlog(event="train", step=step, loss=round(loss.item(), 4), samples_per_s=round(step * 32 * world /
                                                                                           (time.time() - t0), 1))
        elif step % 50 == 0:
            print(f"worker {rank} step {step} loss {loss.item():.3f}", flush=True)
if rank == 0:
    jlog(event="done", steps=400, seconds=round(time.time() - t0, 1))
dist.destroy_process_group()
