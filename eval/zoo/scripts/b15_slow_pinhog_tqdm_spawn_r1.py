"""Tabular click model (wide & deep over hashed categorical features), started with torch.multiprocessing.spawn, DDP
over gloo, 2 processes. Each process shows its own tqdm bar (position = rank) and writes a timing line every 50
steps."""
import argparse
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

STEPS = 700


class WideDeep(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(10000, 16, mode="sum")
        self.wide = nn.EmbeddingBag(10000, 1, mode="sum")
        self.deep = nn.Sequential(nn.Linear(16 + 13, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                  nn.Linear(512, 1))

    def forward(self, cat, num):
        return (self.deep(torch.cat([self.emb(cat), num], 1)) + self.wide(cat)).squeeze(1)


def worker(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = DDP(WideDeep())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
    g = torch.Generator().manual_seed(rank)
    bar = tqdm(range(1, STEPS + 1), desc=f"rank {rank}", position=rank, ncols=90)
    t0 = time.time()
    for step in bar:
        cat = torch.randint(0, 10000, (512, 26), generator=g)
        num = torch.randn(512, 13, generator=g)
        y = ((cat[:, 0] % 7 == 0) | (num[:, 0] > 1)).float()
        loss = nn.functional.binary_cross_entropy_with_logits(model(cat, num), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.4f}")
        if step % 50 == 0:
            tqdm.write(f"[rank {rank}] step {step}/{STEPS} loss {loss.item():.4f} "
                       f"{(time.time() - t0) * 1000 / 50:.1f} ms/step")
            t0 = time.time()
    bar.close()
    dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), "widedeep.pt")
        print("saved widedeep.pt", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--port", type=int, default=29500)
    a = ap.parse_args()
    mp.spawn(worker, args=(a.nprocs, a.port), nprocs=a.nprocs)
