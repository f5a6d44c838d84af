"""Extractive QA head fine-tuning (span start/end over a small encoder), DDP over two nodes (torchrun static
rendezvous), 1 rank per node. Resumes from the last checkpoint, which stores the run's arguments next to the
model and optimizer state (so it is loaded with weights_only=False: we wrote it ourselves)."""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=300)
ap.add_argument("--lr", type=float, default=3e-4)
ap.add_argument("--resume", default="")
ap.add_argument("--save", default="ckpt/last.pt")
args = ap.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])
tag = f"[node{node} rank{rank}]"


class SpanQA(nn.Module):
    def __init__(self, vocab=8000, d=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 256, batch_first=True), 2)
        self.span = nn.Linear(d, 2)

    def forward(self, x):
        s, e = self.span(self.enc(self.emb(x))).unbind(-1)
        return s, e


model = SpanQA()
opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
start = 0
if args.resume:
    ckpt = torch.load(args.resume, map_location="cpu", weights_only=False)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    start = ckpt["step"]
    print(f"{tag} resumed from {args.resume} at step {start} (saved with lr {ckpt['args'].lr})", flush=True)
model = DDP(model)
g = torch.Generator().manual_seed(rank * 1000 + start)
t0 = time.time()
for step in range(start + 1, args.steps + 1):
    x = torch.randint(0, 8000, (16, 96), generator=g)
    ys, ye = torch.randint(0, 48, (16,), generator=g), torch.randint(48, 96, (16,), generator=g)
    s, e = model(x)
    loss = (F.cross_entropy(s, ys) + F.cross_entropy(e, ye)) / 2
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"{tag} step {step}/{args.steps} loss {loss.item():.4f} {(time.time() - t0) * 50:.0f} ms/step",
              flush=True)
        t0 = time.time()
if rank == 0:
    os.makedirs(os.path.dirname(args.save), exist_ok=True)
    torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": args.steps, "args": args},
               args.save)
    print(f"{tag} saved {args.save} (step {args.steps})", flush=True)
dist.destroy_process_group()
