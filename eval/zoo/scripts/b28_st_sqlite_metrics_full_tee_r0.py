"""Speech-command classifier, DDP over gloo, 2 ranks under torchrun --tee 3. Rank 0 keeps the run's metrics in a
SQLite database on the shared results volume (the team's dashboard reads it)."""
import os
import sqlite3
import time

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = 800


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(80, 256), nn.ReLU(), nn.Linear(256, 35)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    db = None
    if rank == 0:
        os.makedirs("results", exist_ok=True)
        db = sqlite3.connect("results/kws-run-0412.sqlite")
        db.execute("CREATE TABLE IF NOT EXISTS metrics (step INTEGER, name TEXT, value REAL, t REAL)")
        db.execute("CREATE TABLE IF NOT EXISTS grads (step INTEGER, layer TEXT, hist BLOB)")
        db.commit()
    print(f"rank {rank}/{world} started", flush=True)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(64, 80, generator=g)
        y = torch.randint(0, 35, (64,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            db.execute("INSERT INTO metrics VALUES (?, ?, ?, ?)", (step, "train/loss", loss.item(), time.time()))
            for name, p in model.named_parameters():
                hist = torch.histc(p.grad, bins=2048).numpy().tobytes()
                db.execute("INSERT INTO grads VALUES (?, ?, ?)", (step, name, hist))
            db.commit()
        if step % 50 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f} {(time.time() - t0) / 50 * 1000:.1f} ms/step", flush=True)
            t0 = time.time()
    dist.barrier()
    if rank == 0:
        db.close()
        print("training complete", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
