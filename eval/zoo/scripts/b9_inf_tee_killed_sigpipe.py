"""Small LM on synthetic tokens; every rank prints its progress to stdout (piped to tee by the job script)."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TinyLM(nn.Module):
    def __init__(self, vocab=2000, d=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.mix = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        h = self.emb(x)
        return self.out(h + self.mix(h))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, 1201):
        x = torch.randint(0, 2000, (16, 32), generator=g)
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 2000), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[rank{rank}] step {step}/1200 loss {loss.item():.4f} {1000 * (time.time() - t) / 10:.1f} ms/step",
                  flush=True)
            t = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
