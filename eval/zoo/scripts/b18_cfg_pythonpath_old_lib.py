"""Keyword-spotting model trained with the team's `trainlib` (schedules, metrics), DDP over gloo, 2 ranks.
Run from the project root: tools/train_kws.py, with trainlib/ next to tools/."""
import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from trainlib.metrics import RunningMean
from trainlib.sched import WarmupCosine

RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s - rank{RANK} - %(levelname)s - %(message)s", level=logging.INFO)
log = logging.getLogger("kws")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    model = DDP(nn.Sequential(nn.Conv1d(40, 64, 3), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = WarmupCosine(opt, warmup=50, total=500)
    avg = RunningMean()
    for step in range(1, 501):
        x, y = torch.randn(32, 40, 98), torch.randint(0, 12, (32,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        avg.update(loss.item())
        if step % 50 == 0:
            log.info(f"step {step}/500 loss {avg.value:.4f} lr {sched.get_last_lr()[0]:.2e}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
