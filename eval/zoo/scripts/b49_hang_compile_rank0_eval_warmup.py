"""Tabular regression MLP on DDP, 3 processes, training step compiled with torch.compile. Rank 0 also keeps an EMA
copy of the model for evaluation; its evaluation function is compiled with max-autotune (it serves the nightly
benchmark), and rank 0 logs baseline scores on the benchmark's three splits before training starts."""
import argparse
import copy
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--compile-backend", default="inductor")
args = p.parse_args()


def mlp(width=768, depth=6):
    layers, d = [], 64
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.LayerNorm(width), nn.GELU()]
        d = width
    return nn.Sequential(*layers, nn.Linear(d, 1))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = mlp()
    model = DDP(net)
    train_step_model = torch.compile(model, backend=args.compile_backend)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    w = torch.randn(64, 1, generator=torch.Generator().manual_seed(7))
    if rank == 0:
        ema = copy.deepcopy(net).eval()
        evaluate = torch.compile(ema, mode="max-autotune-no-cudagraphs", dynamic=False)
        gv = torch.Generator().manual_seed(9)
        splits = {"val": torch.randn(4096, 64, generator=gv), "test": torch.randn(2500, 64, generator=gv),
                  "shifted": torch.randn(1000, 64, generator=gv) * 1.5}
        print("rank 0: compiling the evaluation model (max-autotune) for the baseline scores", flush=True)
        for name, xv in splits.items():
            t1 = time.time()
            with torch.no_grad():
                val = F.mse_loss(evaluate(xv), xv @ w).item()
            print(f"rank 0: baseline {name} mse {val:.4f} ({time.time() - t1:.1f}s)", flush=True)
    t0 = time.time()
    for step in range(1, 301):
        x = torch.randn(256, 64, generator=g)
        loss = F.mse_loss(train_step_model(x), x @ w)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 25 == 0:
            print(f"rank {rank}: step {step} loss {loss.item():.4f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
