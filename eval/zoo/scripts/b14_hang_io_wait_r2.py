"""Acoustic-event tagger on precomputed log-mel features, DDP over gloo, 3 ranks. Features live on the shared
dataset volume (`shared/mels/`), one .npy part per rank per epoch; each rank memory-maps its part for the epoch."""
import logging
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("tagger")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s - %(levelname)s - %(name)s - [rank{rank}] %(message)s")
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(64 * 32, 256), nn.ReLU(), nn.Linear(256, 10)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(3):
        path = os.path.join("shared", "mels", f"epoch{epoch}", f"part-{rank}.npy")
        t = time.time()
        feats = np.load(path)  # read the whole part for the epoch
        labels = np.load(path.replace(".npy", "-labels.npy"))
        log.info("epoch %d: loaded %s %s in %.2fs", epoch, path, feats.shape, time.time() - t)
        t0 = time.time()
        for i in range(0, len(feats) - 31, 32):
            step += 1
            x = torch.from_numpy(feats[i:i + 32])
            y = torch.from_numpy(labels[i:i + 32])
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                log.info("epoch %d step %d loss %.4f %.1f ms/step", epoch, step, loss.item(), (time.time() - t0) * 50)
                t0 = time.time()
    log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
