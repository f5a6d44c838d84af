"""Duplicate-question detector (siamese MLP over hashed n-grams), DDP over gloo, one rank per node.
Every 100 steps each rank scores its slice of the validation pairs and the predictions are gathered
for the accuracy / F1 printed by rank 0."""
import argparse
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--eval-batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--lr", type=float, default=1e-3)
    return p.parse_args()


class Siamese(nn.Module):
    def __init__(self, dim=2048):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, 128))
        self.cls = nn.Linear(256, 2)

    def forward(self, a, b):
        ea, eb = self.enc(a), self.enc(b)
        return self.cls(torch.cat([ea * eb, (ea - eb).abs()], -1))


def batch(g, n):
    a = torch.rand(n, 2048, generator=g)
    b = a + 0.3 * torch.rand(n, 2048, generator=g)
    y = (torch.rand(n, generator=g) > 0.5).long()
    b[y == 0] = torch.rand(int((y == 0).sum()), 2048, generator=g)
    return a, b, y


def evaluate(model, args, rank, world):
    g = torch.Generator().manual_seed(1000 + rank)
    preds, golds = [], []
    with torch.no_grad():
        for _ in range(4):
            a, b, y = batch(g, args.eval_batch_size)
            p = model(a, b).argmax(-1)
            out_p = [torch.empty_like(p) for _ in range(world)]
            out_y = [torch.empty_like(y) for _ in range(world)]
            dist.all_gather(out_p, p)
            dist.all_gather(out_y, y)
            preds += out_p
            golds += out_y
    p, y = torch.cat(preds), torch.cat(golds)
    tp = ((p == 1) & (y == 1)).sum().item()
    f1 = 2 * tp / max(1, (p == 1).sum().item() + (y == 1).sum().item())
    return (p == y).float().mean().item(), f1


def main():
    args = parse()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world}: {vars(args)}", flush=True)
    torch.manual_seed(0)
    model = DDP(Siamese())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        a, b, y = batch(g, args.batch_size)
        loss = nn.functional.cross_entropy(model(a, b), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f} {(time.time() - t0) / 25 * 1000:.0f} ms/step",
                  flush=True)
            t0 = time.time()
        if step % 100 == 0:
            acc, f1 = evaluate(model.module, args, rank, world)
            if rank == 0:
                print(f"== step {step} val acc {acc:.4f} f1 {f1:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
