"""Image-text contrastive model (CLIP-style towers over precomputed features), DDP over gloo, two nodes. Every rank
all-gathers the batch's image and text embeddings so that the loss sees the negatives of the whole global batch."""
import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Towers(nn.Module):
    def __init__(self):
        super().__init__()
        self.img = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 128))
        self.txt = nn.Sequential(nn.Linear(384, 256), nn.ReLU(), nn.Linear(256, 128))
        self.logit_scale = nn.Parameter(torch.tensor(2.659))

    def forward(self, xi, xt):
        return (nn.functional.normalize(self.img(xi), dim=-1), nn.functional.normalize(self.txt(xt), dim=-1),
                self.logit_scale.exp())


def gather_all(t):
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    out[dist.get_rank()] = t  # keep the local gradient
    return torch.cat(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--lr", type=float, default=5e-4)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    node = int(os.environ.get("GROUP_RANK", 0))
    tag = f"[node{node} rank{rank}]"
    print(f"{time.strftime('%H:%M:%S')} {tag} world {world}, batch {args.batch_size} per rank, lr {args.lr}", flush=True)
    model = DDP(Towers())
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, args.steps + 1):
        xi = torch.randn(args.batch_size, 512, generator=g)
        xt = xi[:, :384] + 0.1 * torch.randn(args.batch_size, 384, generator=g)
        zi, zt, scale = model(xi, xt)
        zi, zt = gather_all(zi), gather_all(zt)
        logits = scale * zi @ zt.t()
        target = torch.arange(len(logits))
        loss = (nn.functional.cross_entropy(logits, target) + nn.functional.cross_entropy(logits.t(), target)) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"{time.strftime('%H:%M:%S')} {tag} step {step}/{args.steps} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
