"""Continues training a small decoder LM from the consolidated checkpoint the export job wrote (one full, unsharded
state dict); the model is sharded with FSDP2 (fully_shard per block, then the root) over gloo; plain prints."""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(self.ln(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=5000, d=128, n=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(n))
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.emb(ids)
        for b in self.blocks:
            h = b(h)
        return self.head(h)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    model = TinyLM()
    for b in model.blocks:
        fully_shard(b)
    fully_shard(model)
    ckpt = os.environ.get("INIT_CKPT", "export/tinylm-step24000-full.pt")
    if rank == 0:
        print(f"loading {ckpt}")
    state = torch.load(ckpt, map_location="cpu")
    model.load_state_dict(state["model"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        ids = torch.randint(0, 5000, (16, 33), generator=g)
        loss = F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
