"""Next-basket recommender (item embeddings + GRU), DDP over gloo under torch.multiprocessing.spawn (tcp://); logfmt
lines; rank 0 writes a full checkpoint every 100 steps and keeps the newest two."""
import glob
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

CKPT = "ckpt/basket-gru"


def log(rank, **kv):
    kv = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "level": "info", "rank": rank, **kv}
    print(" ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


class Basket(nn.Module):
    def __init__(self):
        super().__init__()
        self.items = nn.Embedding(8000, 64)
        self.gru = nn.GRU(64, 128, batch_first=True)
        self.out = nn.Linear(128, 8000)

    def forward(self, x):
        h, _ = self.gru(self.items(x))
        return self.out(h[:, -1])


def save(model, opt, step):
    os.makedirs(CKPT, exist_ok=True)
    path = f"{CKPT}/step_{step:06d}.pt"
    torch.save({"step": step, "model": model.module.state_dict(), "optim": opt.state_dict()}, path)
    for old in sorted(glob.glob(f"{CKPT}/step_*.pt"))[:-2]:
        os.remove(old)
    return path


def run(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Basket())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    log(rank, msg="start", steps=500, ckpt_dir=CKPT)
    for step in range(1, 501):
        x = torch.randint(0, 8000, (32, 12), generator=g)
        y = torch.randint(0, 8000, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log(rank, step=step, loss=f"{loss.item():.4f}")
        if step % 100 == 0:
            if rank == 0:
                t0 = time.time()
                path = save(model, opt, step)
                log(rank, msg="checkpoint", path=path, secs=f"{time.time() - t0:.2f}")
            dist.barrier()
    log(rank, msg="done")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[sys.argv.index("--port") + 1])
    mp.spawn(run, args=(2, port), nprocs=2)
