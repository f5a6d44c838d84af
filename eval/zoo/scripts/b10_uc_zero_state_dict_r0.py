"""Transformer encoder for sequence tagging; optimizer state sharded across ranks with ZeroRedundancyOptimizer to
save memory; checkpoint every 200 steps by rank 0."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP


class Tagger(nn.Module):
    def __init__(self, vocab=4000, d=128, tags=9):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, 256, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(d, tags)

    def forward(self, x):
        return self.out(self.enc(self.emb(x)))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(Tagger())
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=3e-4)
    os.makedirs("checkpoints", exist_ok=True)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, 601):
        x = torch.randint(0, 4000, (16, 40), generator=g)
        y = x % 9
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 9), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[rank {rank}] step {step:4d} | loss {loss.item():.4f} | {(time.time() - t) * 50:.1f} ms/step")
            t = time.time()
        if step % 200 == 0 and rank == 0:
            path = f"checkpoints/tagger_step{step}.pt"
            torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, path)
            print(f"[rank 0] saved {path}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
