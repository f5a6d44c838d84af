"""Sensor-window classifier, DDP over gloo, 3 ranks. Each rank streams its own exported parts
(data/rank<R>/part-<K>.npy or .npz: the export job writes either format); per-rank timing every 10 steps."""
import glob
import logging
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank{RANK}] %(message)s", level=logging.INFO)
log = logging.getLogger("sensors")
BS = 64


def batches(rank):
    for path in sorted(glob.glob(f"data/rank{rank}/part-*")):
        src = np.load(path, mmap_mode="r")
        n = 2000
        get = (lambda i, s=src: s["x"][i:i + BS]) if path.endswith(".npz") else (lambda i, s=src: s[i:i + BS])
        for i in range(0, n, BS):
            x = torch.from_numpy(np.ascontiguousarray(get(i), dtype=np.float32))
            yield x, (x[:, :16].sum(1) > 0).long()


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    model = DDP(nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    log.info(f"parts: {len(glob.glob(f'data/rank{RANK}/part-*'))}")
    step, data_t, comp_t = 0, 0.0, 0.0
    t = time.perf_counter()
    for x, y in batches(RANK):
        t1 = time.perf_counter()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t2 = time.perf_counter()
        step += 1
        data_t += t1 - t
        comp_t += t2 - t1
        t = t2
        if step % 10 == 0:
            log.info(f"step {step} loss {loss.item():.4f} data_ms {data_t * 100:.1f} compute_ms {comp_t * 100:.1f}")
            data_t = comp_t = 0.0
    log.info(f"done: {step} steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
