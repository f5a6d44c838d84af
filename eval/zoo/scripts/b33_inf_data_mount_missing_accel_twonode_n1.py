"""Image-quality regressor (small CNN on 32x32 crops) with accelerate across two machines. Every process lists the
dataset's parquet-like .npz shards on the shared dataset mount and takes every world_size-th one."""
import glob
import logging
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)
PATTERN = "datasets/iq/train-*.npz"


def main():
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    files = sorted(glob.glob(PATTERN))
    mine = files[acc.process_index::acc.num_processes]
    if not mine:
        logger.error(f"no training shards for process {acc.process_index}: {PATTERN} matched {len(files)} files",
                     main_process_only=False)
        sys.exit(2)
    logger.info(f"process {acc.process_index}: {len(mine)} shards", main_process_only=False)
    x = torch.from_numpy(np.concatenate([np.load(f)["x"] for f in mine]))
    y = torch.from_numpy(np.concatenate([np.load(f)["y"] for f in mine]))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    t0 = time.time()
    for step in range(1, 301):
        i = torch.randint(0, len(y), (64,))
        loss = F.mse_loss(model(x[i]).squeeze(-1), y[i])
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 25 == 0:
            logger.info(f"step {step}/300 loss {loss.item():.4f} {(time.time() - t0) / step * 1000:.0f} ms/step")
    acc.wait_for_everyone()
    acc.end_training()


if __name__ == "__main__":
    main()
