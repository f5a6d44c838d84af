"""Char-level MLP language model, one process per node; rank 0 logs step times."""
import datetime
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train_lm")


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    ctx, d = 16, 48
    model = DDP(nn.Sequential(nn.Embedding(128, d), nn.Flatten(), nn.Linear(ctx * d, 512), nn.GELU(),
                              nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 128)))
    n_params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        log.info("model: %.2fM parameters", n_params / 1e6)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    steps = 360
    t_win = time.time()
    for step in range(1, steps + 1):
        x = torch.randint(0, 128, (32, ctx + 1), generator=g)
        loss = nn.functional.cross_entropy(model(x[:, :-1]), x[:, -1])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 and rank == 0:
            log.info("step %d/%d loss %.4f step_time_ms %.1f", step, steps, loss.item(),
                     (time.time() - t_win) * 1000 / 20)
            t_win = time.time()
    dist.barrier()
    if rank == 0:
        log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
