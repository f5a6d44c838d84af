"""MLP probe on precomputed image features, DDP. Each rank streams its own feature shard (float32 memmap) from
the team's shared dataset volume, 32 rows per step, in order (one pass)."""
import time
from datetime import datetime

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

ROWS, DIM, BS = 20480, 1024, 32
STEPS = 600


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    feats = np.memmap(f"shared/feats/shard-{rank:02d}.f32", dtype=np.float32, mode="r", shape=(ROWS, DIM))
    model = DDP(nn.Sequential(nn.Linear(DIM, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    t_win, wait_win, n_win = time.time(), 0.0, 0
    for step in range(1, STEPS + 1):
        t0 = time.time()
        x = torch.from_numpy(np.array(feats[(step - 1) * BS: step * BS]))
        wait_win += time.time() - t0
        y = x[:, :10].argmax(1)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        n_win += 1
        if step % 25 == 0 and rank == 0:
            dt = time.time() - t_win
            print(f"[{datetime.now():%Y-%m-%d %H:%M:%S}] train step={step} loss={loss.item():.4f} "
                  f"samples_per_sec={n_win * BS * dist.get_world_size() / dt:.1f} "
                  f"data_wait_ms={1000 * wait_win / n_win:.1f}", flush=True)
            t_win, wait_win, n_win = time.time(), 0.0, 0
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
