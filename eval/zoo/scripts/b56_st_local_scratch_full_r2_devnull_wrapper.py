"""Sequence tagger (BiLSTM over word pieces) with ZeRO-1-style optimizer sharding done by hand: every rank keeps the
Adam state of its slice of the parameters and, every 50 steps, writes that shard to its node-local scratch
(scratch/rank<R>/, the fast NVMe the site gives each rank) for a quick restart. Launched through run_rank.sh, which
sends every rank but 0 to /dev/null (the team's way to keep the console readable)."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)


class Tagger(nn.Module):
    def __init__(self, vocab=8000, dim=96, tags=17):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * dim, tags)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return self.out(h)


model = Tagger()
for p in model.parameters():
    dist.broadcast(p.data, 0)
params = list(model.parameters())
mine = params[rank::world]  # this rank's optimizer shard
opt = torch.optim.Adam(mine, lr=1e-3)
g = torch.Generator().manual_seed(rank)
scratch = f"scratch/rank{rank}"
print(f"rank {rank}: {sum(p.numel() for p in mine):,} of {sum(p.numel() for p in params):,} params in my shard, "
      f"scratch {scratch}", flush=True)
t0 = time.time()
for step in range(1, 201):
    x = torch.randint(1, 8000, (32, 40), generator=g)
    y = x % 17
    loss = F.cross_entropy(model(x).reshape(-1, 17), y.reshape(-1))
    model.zero_grad()
    loss.backward()
    for p in params:
        dist.all_reduce(p.grad)
        p.grad /= world
    opt.step()
    for i, p in enumerate(params):  # each shard's owner sends its updated parameters
        dist.broadcast(p.data, i % world)
    if step % 10 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f} {(time.time() - t0) * 100:.0f} ms/step", flush=True)
        t0 = time.time()
    if step % 50 == 0:
        path = os.path.join(scratch, f"optim_shard_step{step}.pt")
        torch.save({"step": step, "state": opt.state_dict(), "params": [p.data for p in mine]}, path)
        print(f"rank {rank} saved {path} ({os.path.getsize(path) / 2 ** 20:.1f} MB)", flush=True)
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
