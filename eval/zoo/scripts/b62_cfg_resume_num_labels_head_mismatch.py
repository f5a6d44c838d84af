"""Intent classifier (bag-of-embeddings encoder + linear head) fine-tuned on DDP, 2 ranks. Resumes from the
checkpoint given with --resume; the label set comes from --num-labels."""
import argparse
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--num-labels", type=int, default=20)
p.add_argument("--vocab", type=int, default=8000)
p.add_argument("--dim", type=int, default=128)
p.add_argument("--resume", default="")
p.add_argument("--steps", type=int, default=400)
args = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)


class IntentModel(nn.Module):
    def __init__(self, vocab, dim, num_labels):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.classifier = nn.Linear(dim, num_labels)

    def forward(self, ids):
        return self.classifier(self.encoder(self.embed(ids)))


model = IntentModel(args.vocab, args.dim, args.num_labels)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
start = 0
if rank == 0:
    print(f"[rank0] intents: {args.num_labels} labels, vocab {args.vocab}, world {world}", flush=True)
if args.resume:
    ckpt = torch.load(args.resume, map_location="cpu")
    print(f"[rank{rank}] loading {args.resume} (step {ckpt['step']})", flush=True)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    start = ckpt["step"]
model = DDP(model)
g = torch.Generator().manual_seed(rank)
for step in range(start + 1, start + args.steps + 1):
    ids = torch.randint(0, args.vocab, (64, 24), generator=g)
    y = torch.randint(0, args.num_labels, (64,), generator=g)
    loss = F.cross_entropy(model(ids), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
