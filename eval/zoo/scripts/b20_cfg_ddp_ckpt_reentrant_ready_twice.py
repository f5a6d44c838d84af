"""Small transformer LM on a character corpus, DDP over gloo. The optional span-prediction head is only used with
--span-loss, so the model is wrapped with find_unused_parameters=True; --grad-ckpt recomputes each block in backward
(activation checkpointing, to fit longer contexts)."""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, default=4)
p.add_argument("--d-model", type=int, default=128)
p.add_argument("--ctx", type=int, default=128)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--steps", type=int, default=300)
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--span-loss", action="store_true")
args = p.parse_args()

VOCAB = 96


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        mask = torch.triu(torch.ones(x.size(1), x.size(1), dtype=torch.bool), 1)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.ff(self.ln2(x))


class CharLM(nn.Module):
    def __init__(self, d, layers, grad_ckpt):
        super().__init__()
        self.grad_ckpt = grad_ckpt
        self.emb = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.zeros(1, args.ctx, d))
        self.blocks = nn.ModuleList([Block(d) for _ in range(layers)])
        self.head = nn.Linear(d, VOCAB)
        self.span_head = nn.Linear(d, 2)

    def forward(self, ids, span=False):
        x = self.emb(ids) + self.pos[:, : ids.size(1)]
        for blk in self.blocks:
            x = checkpoint(blk, x, use_reentrant=True) if self.grad_ckpt else blk(x)
        return self.head(x), (self.span_head(x) if span else None)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = CharLM(args.d_model, args.layers, args.grad_ckpt)
    n = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(f"model: {n / 1e6:.2f}M params, {args.layers} layers, d_model {args.d_model}, "
              f"grad_ckpt={args.grad_ckpt}, world_size={world}")
    model = DDP(model, find_unused_parameters=True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    g = torch.Generator().manual_seed(1000 + rank)
    corpus = torch.randint(0, VOCAB, (200_000,), generator=g)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, corpus.numel() - args.ctx - 1, (args.batch_size,), generator=g)
        x = torch.stack([corpus[i : i + args.ctx] for i in idx])
        y = torch.stack([corpus[i + 1 : i + args.ctx + 1] for i in idx])
        logits, _ = model(x, span=args.span_loss)
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if rank == 0 and step % 20 == 0:
            print(f"step {step}/{args.steps} loss {loss.item():.4f} {(time.time() - t0) / step * 1000:.0f} ms/step")
    if rank == 0:
        torch.save(model.module.state_dict(), "charlm.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
