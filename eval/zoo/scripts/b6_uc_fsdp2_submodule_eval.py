"""Small transformer LM with FSDP2 (fully_shard per block), CPU/gloo; logs sentence-embedding drift every epoch."""
import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class LM(nn.Module):
    def __init__(self, vocab=4096, d=128, layers=4, heads=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.tok(ids)
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--steps-per-epoch", type=int, default=30)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = LM()
    for b in model.blocks:
        fully_shard(b)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    probe = torch.randint(0, 4096, (8, 16), generator=torch.Generator().manual_seed(123))
    g = torch.Generator().manual_seed(rank)
    step = 0
    for epoch in range(args.epochs):
        t0 = time.time()
        for _ in range(args.steps_per_epoch):
            ids = torch.randint(0, 4096, (16, 65), generator=g)
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if rank == 0 and step % 10 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
        # track how the token embeddings of a fixed probe batch move
        with torch.no_grad():
            emb = model.tok(probe).mean(dim=1)
        if rank == 0:
            print(f"epoch {epoch} done in {time.time() - t0:.1f}s, probe embedding norm {emb.norm(dim=-1).mean():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
