"""Denoising autoencoder sweep run: the run name encodes the whole hyper-parameter set so checkpoints of different
sweep points never collide; rank 0 checkpoints every 200 steps."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

HP = {
    "model": "dae", "in_dim": 96, "hidden": [256, 128, 64], "activation": "gelu", "dropout": 0.1,
    "noise": "gaussian", "noise_std": 0.3, "optimizer": "adamw", "lr": 0.0005, "betas": [0.9, 0.98],
    "weight_decay": 0.05, "batch_size": 64, "warmup_steps": 100, "schedule": "cosine", "max_steps": 1000,
    "grad_clip": 1.0, "seed": 17, "dataset": "sensor-v3-normalized-2026-11", "world_size": None,
}


def run_name(hp):
    return "_".join(f"{k}={'-'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in hp.items())


def build(hp):
    dims = [hp["in_dim"], *hp["hidden"]]
    enc = [m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.GELU(), nn.Dropout(hp["dropout"]))]
    dims = dims[::-1]
    dec = [m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.GELU())][:-1]
    return nn.Sequential(*enc, *dec)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    HP["world_size"] = dist.get_world_size()
    name = run_name(HP)
    ckpt_dir = os.path.join("checkpoints", name)
    if rank == 0:
        print(f"run: {name}")
        os.makedirs("checkpoints", exist_ok=True)
    torch.manual_seed(HP["seed"])
    model = DDP(build(HP))
    opt = torch.optim.AdamW(model.parameters(), lr=HP["lr"], betas=HP["betas"], weight_decay=HP["weight_decay"])
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, HP["max_steps"] + 1):
        clean = torch.randn(HP["batch_size"], HP["in_dim"], generator=g)
        noisy = clean + HP["noise_std"] * torch.randn(clean.shape, generator=g)
        loss = nn.functional.mse_loss(model(noisy), clean)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), HP["grad_clip"])
        opt.step()
        if step % 20 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f} {(time.time() - t) * 50:.1f}ms/step")
            t = time.time()
        if step % 200 == 0 and rank == 0:
            os.makedirs(ckpt_dir, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step},
                       os.path.join(ckpt_dir, f"step_{step:06d}.pt"))
            print(f"[rank0] saved checkpoint at step {step}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
