"""Tiny GPT-style LM pretraining with a DeepSpeed-like engine wrapper (wall-clock breakdown on)."""
import datetime
import logging
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] %(message)s",
                    level=logging.INFO)
log = logging.getLogger("train")

VOCAB, CTX, DIM = 2048, 32, 128


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.attn = nn.MultiheadAttention(DIM, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, layers=2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(CTX, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(layers))
        self.head = nn.Linear(DIM, VOCAB, bias=False)
        self.register_buffer("mask", torch.triu(torch.full((CTX, CTX), float("-inf")), 1))

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x, self.mask)
        return self.head(x)


class Timers:
    def __init__(self):
        self.acc = {}

    def add(self, name, dt):
        self.acc[name] = self.acc.get(name, 0.0) + dt

    def log(self, names, steps):
        s = " | ".join(f"{n}: {self.acc.get(n, 0.0) * 1000 / steps:.2f}" for n in names)
        self.acc = {}
        return s


def log_dist(msg, ranks=(0,)):
    if dist.get_rank() in ranks:
        log.info(f"[Rank {dist.get_rank()}] {msg}", stacklevel=2)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234)
    model = DDP(GPT())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    steps_total, micro_bs, print_every = 500, 8, 10
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
    g = torch.Generator().manual_seed(rank)
    corpus = torch.randint(0, VOCAB, (200_000,), generator=g)
    log_dist(f"DeepSpeed-like engine: world_size={world} micro_batch={micro_bs} params="
             f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f}M wall_clock_breakdown=True")
    timers = Timers()
    t_win = time.time()
    for step in range(1, steps_total + 1):
        ix = torch.randint(0, len(corpus) - CTX - 1, (micro_bs,), generator=g)
        x = torch.stack([corpus[i:i + CTX] for i in ix])
        y = torch.stack([corpus[i + 1:i + CTX + 1] for i in ix])
        t0 = time.time()
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
        t1 = time.time()
        loss.backward()
        t2 = time.time()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        t3 = time.time()
        timers.add("fwd_microstep", t1 - t0)
        timers.add("bwd_microstep", t2 - t1)
        timers.add("step_microstep", t3 - t2)
        if step % print_every == 0:
            dt = time.time() - t_win
            t_win = time.time()
            log_dist(f"step={step}, skipped=0, lr=[{sched.get_last_lr()[0]:.6g}], mom=[(0.9, 0.95)]")
            if rank == 0:
                sps = micro_bs * world * print_every / dt
                log.info(f"epoch=0/micro_step={step}/global_step={step}, RunningAvgSamplesPerSec={sps:.2f}, "
                         f"CurrSamplesPerSec={sps:.2f}, MemAllocated=0.0GB, MaxMemAllocated=0.0GB, "
                         f"loss={loss.item():.4f}")
                log.info(f"[Rank 0] time (ms) | " + timers.log(["fwd_microstep", "bwd_microstep", "step_microstep"],
                                                               print_every))
            else:
                timers.acc = {}
    log_dist(f"finished training, ppl={math.exp(loss.item()):.1f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
