"""GPT-style pre-training loop (DDP, gloo) that logs the way Megatron-LM does, from the last rank, with
validation and checkpoints every few hundred iterations."""
import argparse
import datetime
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TinyGPT(nn.Module):
    def __init__(self, vocab=4096, d=128, layers=2, ctx=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((ctx, ctx), float("-inf")), 1))

    def forward(self, x):
        t = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(t))
        return self.head(self.blocks(h, mask=self.mask[:t, :t], is_causal=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-iters", type=int, default=600)
    ap.add_argument("--micro-batch-size", type=int, default=8)
    ap.add_argument("--seq-length", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--log-interval", type=int, default=10)
    ap.add_argument("--eval-interval", type=int, default=200)
    ap.add_argument("--eval-iters", type=int, default=60)
    ap.add_argument("--save-interval", type=int, default=300)
    ap.add_argument("--save", default="checkpoints/gpt-tiny")
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234)
    model = DDP(TinyGPT(ctx=args.seq_length))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    gbs = args.micro_batch_size * world
    g = torch.Generator().manual_seed(rank)
    if rank == world - 1:
        n = sum(p.numel() for p in model.parameters())
        print(f" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {n}", flush=True)
    t0 = time.time()
    loss_acc = 0.0
    for it in range(1, args.train_iters + 1):
        lr = args.lr * min(1.0, it / 50) * 0.5 * (1 + math.cos(math.pi * it / args.train_iters))
        for pg in opt.param_groups:
            pg["lr"] = lr
        x = torch.randint(0, 4096, (args.micro_batch_size, args.seq_length + 1), generator=g)
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 4096), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_acc += loss.item()
        if it % args.log_interval == 0:
            ms = (time.time() - t0) * 1000 / args.log_interval
            if rank == world - 1:
                now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
                print(f" [{now}] iteration {it:8d}/{args.train_iters:8d} | consumed samples: {it * gbs:12d} | "
                      f"elapsed time per iteration (ms): {ms:.1f} | learning rate: {lr:.6E} | "
                      f"global batch size: {gbs:5d} | lm loss: {loss_acc / args.log_interval:.6E} | "
                      f"loss scale: 1.0 | grad norm: {gn.item():.3f} | number of skipped iterations:   0 | "
                      f"number of nan iterations:   0 |", flush=True)
            loss_acc = 0.0
            t0 = time.time()
        if it % args.eval_interval == 0:
            model.eval()
            with torch.no_grad():
                vl = torch.zeros(1)
                for _ in range(args.eval_iters):
                    xv = torch.randint(0, 4096, (args.micro_batch_size, args.seq_length + 1), generator=g)
                    vl += nn.functional.cross_entropy(model(xv[:, :-1]).reshape(-1, 4096), xv[:, 1:].reshape(-1))
                dist.all_reduce(vl)
                vl = vl.item() / args.eval_iters / world
            model.train()
            if rank == world - 1:
                line = (f" validation loss at iteration {it} | lm loss value: {vl:.6E} | "
                        f"lm loss PPL: {math.exp(min(vl, 20)):.6E} | ")
                print("-" * len(line) + "\n" + line + "\n" + "-" * len(line), flush=True)
            t0 = time.time()
        if it % args.save_interval == 0:
            if rank == 0:
                print(f"saving checkpoint at iteration {it:7d} to {args.save}", flush=True)
                d = os.path.join(args.save, f"iter_{it:07d}")
                os.makedirs(d, exist_ok=True)
                torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "iteration": it},
                           os.path.join(d, "model_optim_rng.pt"))
                print(f"  successfully saved checkpoint at iteration {it:7d} to {args.save}", flush=True)
            dist.barrier()
            t0 = time.time()
    if rank == 0:
        print("[after training is done] datetime: " + datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
