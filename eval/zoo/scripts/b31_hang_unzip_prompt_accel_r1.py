"""Plant-disease classifier (small CNN on 32 x 32 crops) with accelerate. Each process unpacks its image shard into
the node-local cache before training."""
import os
import subprocess
from datetime import timedelta

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger

log = get_logger("plants")


def unpack(rank):
    src = f"data/crops-{rank}.zip"
    dst = f"cache/crops-{rank}"
    os.makedirs(dst, exist_ok=True)
    log.info(f"process {rank}: unpacking {src} -> {dst}", main_process_only=False)
    subprocess.run(["unzip", "-q", src, "-d", dst], check=True)
    files = sorted(f for f in os.listdir(dst) if f.endswith(".npy"))
    log.info(f"process {rank}: {len(files)} files in {dst}", main_process_only=False)
    return files, dst


def main():
    import logging
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=20))])
    rank = acc.process_index
    files, dst = unpack(rank)
    x = torch.from_numpy(np.concatenate([np.load(os.path.join(dst, f)) for f in files if f.startswith("x")]))
    y = torch.from_numpy(np.concatenate([np.load(os.path.join(dst, f)) for f in files if f.startswith("y")]))
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 38))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    for step in range(1, 301):
        idx = torch.randint(0, len(x), (32,))
        loss = F.cross_entropy(model(x[idx].float() / 255), y[idx].long())
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if step % 25 == 0:
            log.info(f"process {rank} step {step} loss {loss.item():.4f}", main_process_only=False)
    acc.end_training()


if __name__ == "__main__":
    main()
