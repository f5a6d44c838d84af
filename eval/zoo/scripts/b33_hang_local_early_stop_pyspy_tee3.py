"""Learning-to-rank scorer (MLP, pairwise logistic loss), DDP over gloo, 2 ranks. Every 50 steps each rank
computes the loss on its validation part and applies early stopping (patience 3), then saves the best model once
every rank is done. Plain prints."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

PATIENCE = 3


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    v = torch.load(f"data/valid-{rank}.pt")
    w = torch.load("data/w.pt")
    g = torch.Generator().manual_seed(rank)
    best, bad = float("inf"), 0
    print(f"[rank {rank}] {len(v['a'])} validation pairs, patience {PATIENCE}", flush=True)
    t0 = time.time()
    for step in range(1, 5001):
        a, b = torch.randn(256, 64, generator=g), torch.randn(256, 64, generator=g)
        pref = ((a - b) @ w > 0).float()
        loss = F.binary_cross_entropy_with_logits((model(a) - model(b)).squeeze(-1), pref)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            with torch.no_grad():
                vl = F.binary_cross_entropy_with_logits((model(v["a"]) - model(v["b"])).squeeze(-1), v["pref"]).item()
            if vl < best - 1e-4:
                best, bad = vl, 0
            else:
                bad += 1
            print(f"[rank {rank}] step {step} train {loss.item():.4f} val {vl:.4f} best {best:.4f} "
                  f"({(time.time() - t0) / step * 1000:.1f} ms/step)", flush=True)
            if bad >= PATIENCE:
                print(f"[rank {rank}] early stopping at step {step}", flush=True)
                break
    dist.barrier()
    if rank == 0:
        os.makedirs("out", exist_ok=True)
        torch.save(model.module.state_dict(), "out/ranker.pt")
        print("saved out/ranker.pt", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
