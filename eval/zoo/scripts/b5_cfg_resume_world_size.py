"""Regression MLP with a ZeRO-1 style optimizer: each rank keeps Adam moments for its slice of the flat params."""
import argparse
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn


def build_model():
    return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1))


class ShardedAdam:
    def __init__(self, params, rank, world, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        self.params = list(params)
        self.rank, self.world, self.lr, self.betas, self.eps = rank, world, lr, betas, eps
        self.numel = sum(p.numel() for p in self.params)
        self.shard = math.ceil(self.numel / world)
        self.lo = rank * self.shard
        self.hi = min(self.numel, self.lo + self.shard)
        n = self.hi - self.lo
        self.exp_avg = torch.zeros(n)
        self.exp_avg_sq = torch.zeros(n)
        self.step_count = 0

    def flat(self, what):
        return torch.cat([getattr(p, what).reshape(-1) for p in self.params])

    def step(self):
        self.step_count += 1
        g = self.flat("grad")
        dist.all_reduce(g)
        g /= self.world
        gs = g[self.lo:self.hi]
        b1, b2 = self.betas
        self.exp_avg.mul_(b1).add_(gs, alpha=1 - b1)
        self.exp_avg_sq.mul_(b2).addcmul_(gs, gs, value=1 - b2)
        upd = torch.zeros(self.shard * self.world)
        c1, c2 = 1 - b1 ** self.step_count, 1 - b2 ** self.step_count
        upd[self.lo:self.hi] = -self.lr * (self.exp_avg / c1) / ((self.exp_avg_sq / c2).sqrt() + self.eps)
        dist.all_reduce(upd)
        off = 0
        with torch.no_grad():
            for p in self.params:
                p.add_(upd[off:off + p.numel()].view_as(p))
                off += p.numel()

    def state_dict(self):
        return {"exp_avg": self.exp_avg, "exp_avg_sq": self.exp_avg_sq, "step": self.step_count}

    def load_state_dict(self, sd):
        self.exp_avg.copy_(sd["exp_avg"])
        self.exp_avg_sq.copy_(sd["exp_avg_sq"])
        self.step_count = sd["step"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--resume", default=None)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--save-dir", default="ckpt")
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = build_model()
    opt = ShardedAdam(model.parameters(), rank, world)
    start = 0
    if args.resume:
        model.load_state_dict(torch.load(os.path.join(args.resume, "model.pt")))
        opt.load_state_dict(torch.load(os.path.join(args.resume, f"zero_rank{rank}.pt")))
        start = opt.step_count
        print(f"[rank {rank}] resumed from {args.resume} at step {start}")
    g = torch.Generator().manual_seed(1000 + rank)
    for step in range(start, start + args.steps):
        x = torch.randn(32, 64, generator=g)
        y = x[:, :8].sum(1, keepdim=True)
        loss = nn.functional.mse_loss(model(x), y)
        for p in model.parameters():
            p.grad = None
        loss.backward()
        opt.step()
        if rank == 0 and step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}")
        if (step + 1) % 100 == 0:
            d = os.path.join(args.save_dir, f"step_{step + 1:06d}")
            os.makedirs(d, exist_ok=True)
            if rank == 0:
                torch.save(model.state_dict(), os.path.join(d, "model.pt"))
            torch.save(opt.state_dict(), os.path.join(d, f"zero_rank{rank}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
