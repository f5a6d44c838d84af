"""Speaker-embedding model (x-vector style), DDP over gloo, 2 ranks; logs with asctime, checkpoint every 150 steps."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s | rank {RANK} | %(levelname)s | %(message)s", level=logging.INFO)
log = logging.getLogger(__name__)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    model = DDP(nn.Sequential(nn.Conv1d(40, 128, 5), nn.ReLU(), nn.Conv1d(128, 128, 3, dilation=2), nn.ReLU(),
                              nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(128, 400)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    os.makedirs("ckpt", exist_ok=True)
    total, t0 = 900, time.time()
    for step in range(1, total + 1):
        x, y = torch.randn(32, 40, 120), torch.randint(0, 400, (32,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 30 == 0:
            log.info(f"step {step}/{total} loss {loss.item():.4f} ({(time.time() - t0) / 30:.3f} s/step)")
            t0 = time.time()
        if step % 150 == 0 and RANK == 0:
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, "ckpt/last.pt")
            log.info(f"checkpoint saved at step {step}")
    log.info("training complete")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
