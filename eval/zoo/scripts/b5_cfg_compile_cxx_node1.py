"""MLP-mixer style model, DDP over gloo on two CPU nodes, compiled with torch.compile (inductor)."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class MixerBlock(nn.Module):
    def __init__(self, tokens=16, d=64):
        super().__init__()
        self.n1 = nn.LayerNorm(d)
        self.tok = nn.Sequential(nn.Linear(tokens, 64), nn.GELU(), nn.Linear(64, tokens))
        self.n2 = nn.LayerNorm(d)
        self.ch = nn.Sequential(nn.Linear(d, 128), nn.GELU(), nn.Linear(128, d))

    def forward(self, x):
        x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.n2(x))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = nn.Sequential(nn.Linear(48, 64), MixerBlock(), MixerBlock(), nn.Flatten(), nn.Linear(16 * 64, 10))
    model = DDP(model)
    cmodel = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 201):
        x = torch.randn(32, 16, 48, generator=g)
        y = torch.randint(0, 10, (32,), generator=g)
        loss = nn.functional.cross_entropy(cmodel(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 1:
            print(f"[rank {rank}] first step (compilation) took {time.time() - t0:.1f}s", flush=True)
        if step % 20 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
