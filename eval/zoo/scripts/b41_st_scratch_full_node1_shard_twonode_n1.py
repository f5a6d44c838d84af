"""Tabular transformer for fraud scoring, DDP across two nodes (one rank each). Every 100 steps each rank writes
its shard of the resumable state (model, optimizer, data cursor) to the node-local scratch ($LOCAL_SCRATCH) and the
shards are synced to shared storage by the node agent."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])
scratch = os.path.join(os.environ["LOCAL_SCRATCH"], "fraud-tt-0931")
os.makedirs(scratch, exist_ok=True)
print(f"[node{node} rank{rank}] checkpoint shards -> {scratch}", flush=True)


class TabTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.cat = nn.Embedding(30000, 64)
        layer = nn.TransformerEncoderLayer(64, 4, 256, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 3)
        self.num = nn.Linear(16, 64)
        self.head = nn.Linear(128, 1)

    def forward(self, cats, nums):
        h = self.enc(self.cat(cats)).mean(1)
        return self.head(torch.cat([h, self.num(nums)], 1)).squeeze(1)


model = DDP(TabTransformer())
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in range(1, 401):
    cats = torch.randint(0, 30000, (64, 12), generator=g)
    nums = torch.randn(64, 16, generator=g)
    y = (nums[:, 0] + nums[:, 1] > 1).float()
    loss = F.binary_cross_entropy_with_logits(model(cats, nums), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"[node{node} rank{rank}] step {step} loss {loss.item():.4f} {(time.time() - t0) * 40:.0f} ms/step",
              flush=True)
        t0 = time.time()
    if step % 100 == 0:
        path = os.path.join(scratch, f"step{step:06d}-rank{rank}.pt")
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step,
                    "rng": g.get_state()}, path)
        print(f"[node{node} rank{rank}] wrote {path} ({os.path.getsize(path) >> 20} MiB)", flush=True)
        dist.barrier()
dist.destroy_process_group()
