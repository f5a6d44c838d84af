"""Continued pre-training of a small transformer LM with FSDP2 (fully_shard), resuming from a DCP checkpoint."""
import argparse
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, d, layers, heads):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--resume", default=None)
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = TinyLM(args.vocab, args.hidden, args.layers, args.heads)
    for b in model.blocks:
        fully_shard(b)
    fully_shard(model)
    if rank == 0:
        n = sum(p.numel() for p in model.parameters())
        print(f"model: vocab={args.vocab} hidden={args.hidden} layers={args.layers} heads={args.heads}, "
              f"{n} params (sharded view)")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    if args.resume:
        t = time.time()
        sd = get_model_state_dict(model)
        dcp.load(sd, checkpoint_id=args.resume)
        set_model_state_dict(model, sd)
        if rank == 0:
            print(f"loaded {args.resume} in {time.time() - t:.2f}s")
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        idx = torch.randint(0, args.vocab, (8, 64), generator=g)
        logits = model(idx[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab), idx[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
