"""Small decoder LM pre-training with FSDP2 (fully_shard per block). Every --save-every steps each rank saves its
own shard of the model and optimizer state (model_rank<R>.pt / optim_rank<R>.pt) plus meta.json; --resume DIR
continues from such a directory."""
import argparse
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
p.add_argument("--save-every", type=int, default=50)
p.add_argument("--resume", default="")
args = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
V, D = 4000, 128


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x):
        return x + self.ff(self.ln(x))


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.blocks = nn.ModuleList(Block() for _ in range(3))
        self.head = nn.Linear(D, V)

    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks:
            h = b(h)
        return self.head(h)


torch.manual_seed(0)
model = LM()
for b in model.blocks:
    fully_shard(b)
fully_shard(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
if rank == 0:
    print(f"world_size {world}, {sum(p.numel() for p in model.parameters())} params (sharded)", flush=True)
start = 0
if args.resume:
    meta = json.load(open(os.path.join(args.resume, "meta.json")))
    print(f"[rank{rank}] resuming from {args.resume} (step {meta['step']}, saved by {meta['world_size']} ranks)",
          flush=True)
    model.load_state_dict(torch.load(os.path.join(args.resume, f"model_rank{rank}.pt"), weights_only=False))
    opt.load_state_dict(torch.load(os.path.join(args.resume, f"optim_rank{rank}.pt"), weights_only=False))
    start = meta["step"]

g = torch.Generator().manual_seed(1000 * rank + start)
t0 = time.time()
for step in range(start + 1, args.steps + 1):
    x = torch.randint(0, V, (8, 64), generator=g)
    loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, V), x[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0 and rank == 0:
        print(f"step {step} loss {loss.item():.4f} {(time.time() - t0) * 100:.0f} ms/step", flush=True)
        t0 = time.time()
    if step % args.save_every == 0:
        d = f"ckpt/step_{step:06d}"
        os.makedirs(d, exist_ok=True)
        torch.save(model.state_dict(), f"{d}/model_rank{rank}.pt")
        torch.save(opt.state_dict(), f"{d}/optim_rank{rank}.pt")
        if rank == 0:
            json.dump({"step": step, "world_size": world}, open(f"{d}/meta.json", "w"))
            print(f"saved {d}", flush=True)
dist.destroy_process_group()
