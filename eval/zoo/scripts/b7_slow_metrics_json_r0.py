"""Regression MLP under mp.spawn; rank 0 keeps a metrics.json the dashboard reads."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 600


def run(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["PORT"], rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=30))
    model = DDP(nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    history = []
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(64, 64, generator=g)
        out = model(x)
        loss = nn.functional.mse_loss(out, x[:, :8].sin())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            gn = {n: p.grad.norm().item() for n, p in model.named_parameters()}
            hist = {n: p.grad.histc(bins=24).tolist() for n, p in model.named_parameters()}
            history.append({"step": step, "loss": loss.item(), "lr": 0.01, "time": time.time(), "grad_norm": gn,
                            "grad_hist": hist, "out_mean": out.mean().item(), "out_std": out.std().item()})
            with open("metrics.json", "w") as f:  # the dashboard polls this file
                json.dump(history, f, indent=2)
            if step % 25 == 0:
                print(f"step {step}/{STEPS} loss {loss.item():.4f} time {(time.time() - t0) * 40:.1f}ms")
                t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2)
