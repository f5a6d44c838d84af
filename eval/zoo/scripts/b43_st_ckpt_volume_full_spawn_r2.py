"""Speech-command classifier (1-D conv encoder) with DDP, started with torch.multiprocessing.spawn on 3 processes.
Every 50 steps each process writes its own shard of the weights (safetensors) into the shared checkpoint directory;
the processes take turns so that the file server is not hit by all writers at once."""
import json
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT_DIR = "checkpoints/kws-conv-0519"
STEPS = 400


def encoder():
    return nn.Sequential(nn.Conv1d(40, 256, 5, padding=2), nn.ReLU(), nn.Conv1d(256, 256, 5, padding=2), nn.ReLU(),
                         nn.Conv1d(256, 256, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                         nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 35))


def save_shard(model, rank, world, step):
    d = f"{CKPT_DIR}/step_{step:06d}"
    os.makedirs(d, exist_ok=True)
    names = sorted(model.state_dict())
    mine = {k: v.contiguous() for i, k in enumerate(names) if i % world == rank for v in [model.state_dict()[k]]}
    for r in range(world):  # one writer at a time
        if r == rank:
            t = time.time()
            path = f"{d}/model-{rank:05d}-of-{world:05d}.safetensors"
            save_file(mine, path)
            print(f"rank {rank}: wrote {path} ({os.path.getsize(path) / 2**20:.1f} MiB) in {time.time() - t:.2f}s",
                  flush=True)
        dist.barrier()
    if rank == 0:
        json.dump({"step": step, "world_size": world}, open(f"{d}/meta.json", "w"))


def main(rank, world):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=25))
    torch.set_num_threads(1)
    model = DDP(encoder())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(16, 40, 49, generator=g)
        y = torch.randint(0, 35, (16,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"rank {rank}: step {step}/{STEPS} loss {loss.item():.4f} {(time.time() - t0) * 100:.1f} ms/step",
                  flush=True)
            t0 = time.time()
        if step % 50 == 0:
            save_shard(model.module, rank, world, step)
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(3,), nprocs=3)
