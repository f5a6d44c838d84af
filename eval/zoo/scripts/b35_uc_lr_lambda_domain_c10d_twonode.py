"""Speaker-embedding model (TDNN-ish 1-D conv net on log-mel frames), DDP over gloo, gradient accumulation, a
warm-up + square-root decay learning-rate schedule; python logging with asctime."""
import argparse
import logging
import math
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

log = logging.getLogger("spk")


def make_dataset(n=12800, speakers=200):
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, speakers, (n,), generator=g)
    centers = torch.randn(speakers, 40, generator=g)
    x = centers[y][:, :, None] + 0.8 * torch.randn(n, 40, 50, generator=g)
    return TensorDataset(x, y)


class XVector(nn.Module):
    def __init__(self, speakers=200):
        super().__init__()
        self.tdnn = nn.Sequential(nn.Conv1d(40, 128, 5, padding=2), nn.ReLU(), nn.Conv1d(128, 128, 3, dilation=2,
                                  padding=2), nn.ReLU(), nn.Conv1d(128, 256, 1), nn.ReLU())
        self.embed = nn.Linear(512, 128)
        self.out = nn.Linear(128, speakers)

    def forward(self, x):
        h = self.tdnn(x)
        stats = torch.cat([h.mean(-1), h.std(-1)], dim=1)
        return self.out(F.relu(self.embed(stats)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--grad-accum", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=30)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = make_dataset()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    dl = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(XVector())
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    total_steps = args.epochs * len(dl) // args.grad_accum

    def lr_lambda(step):
        if step < args.warmup:
            return (step + 1) / args.warmup
        return math.sqrt(1.0 - (step - args.warmup) / (total_steps - args.warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    if rank == 0:
        log.info("world %d, %d batches/epoch/rank, %d optimizer steps, node %s", world, len(dl), total_steps,
                 os.environ.get("GROUP_RANK"))
    opt_step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(dl):
            loss = F.cross_entropy(model(x), y) / args.grad_accum
            loss.backward()
            sched.step()
            if (i + 1) % args.grad_accum == 0:
                opt.step()
                opt.zero_grad()
                opt_step += 1
                if opt_step % 25 == 0:
                    log.info("[rank %d] epoch %d step %d/%d loss %.4f lr %.2e", rank, epoch, opt_step, total_steps,
                             loss.item() * args.grad_accum, sched.get_last_lr()[0])
    if rank == 0:
        log.info("training done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
