"""Exactly-once sample accounting for the click-log trainer, 3 ranks (DDP, gloo): every rank records the ids of the
samples it consumed in each step in the job's key-value store (the one torchrun already runs for the job, at
MASTER_ADDR:MASTER_PORT), so that a resumed job can skip what was already trained on."""
import datetime
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ledger = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                           timeout=datetime.timedelta(seconds=30))
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adagrad(ddp.parameters(), lr=0.05)
    rng = np.random.default_rng(rank)
    run = os.environ.get("TORCHELASTIC_RUN_ID", "job")
    t_last = time.time()
    for step in range(1, 501):
        ids = rng.integers(0, 2**62, size=4096 * 64, dtype=np.int64)  # the 4096 sessions' event ids of this batch
        x = torch.randn(4096, 64)
        y = (x[:, 0] > 0).float()
        loss = F.binary_cross_entropy_with_logits(ddp(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ledger.set(f"ledger/{run}/rank{rank}/step{step}", ids.tobytes())
        if step % 10 == 0:
            now = time.time()
            print(f"[rank{rank}] step {step}/500 loss {loss.item():.4f} ({(now - t_last) / 10 * 1000:.0f} ms/step, "
                  f"ledger {step} steps)", flush=True)
            t_last = now
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
