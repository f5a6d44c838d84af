"""Turbine power-curve regressor on per-site telemetry shards. Started with torch.multiprocessing.spawn on one
machine; each rank writes its own log file (logs/train_rank<R>.log), the terminal only shows the launcher.
A guard stops the run on a non-finite loss rather than letting it poison the weights."""
import logging
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD = 3
FEATURES = ["wind_speed", "wind_dir_sin", "wind_dir_cos", "air_density", "rotor_rpm", "pitch_deg", "yaw_err",
            "nacelle_temp"]


def setup_logging(rank):
    os.makedirs("logs", exist_ok=True)
    log = logging.getLogger("powercurve")
    log.setLevel(logging.INFO)
    fh = logging.FileHandler(f"logs/train_rank{rank}.log")
    fh.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s [rank{rank}] %(message)s"))
    log.addHandler(fh)
    return log


def worker(rank, port):
    log = setup_logging(rank)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
                           timeout=timedelta(seconds=25))
    d = np.load(f"data/site_{rank:02d}.npz")
    x = torch.from_numpy(d["x"])
    y = torch.from_numpy(d["power_kw"])
    mu, sd = x[:4096].mean(0), x[:4096].std(0) + 1e-6  # scaler fitted on a sample of the shard
    log.info("site shard %d: %d rows, features %s", rank, len(x), ",".join(FEATURES))
    model = DDP(nn.Sequential(nn.Linear(len(FEATURES), 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                              nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    t0 = time.time()
    for step in range(1, 401):
        i = ((step - 1) * 128) % (len(x) - 128)
        xb = (x[i:i + 128] - mu) / sd
        pred = model(xb).squeeze(-1)
        loss = F.mse_loss(pred, y[i:i + 128] / 1000.0)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite loss {loss.item()} at step {step} on rank {rank} "
                                     f"(rows {i}-{i + 127} of data/site_{rank:02d}.npz)")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d/400 loss %.5f %.1f ms/step", step, loss.item(), (time.time() - t0) * 40)
            t0 = time.time()
    log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1])
    print(f"spawning {WORLD} ranks (tcp://127.0.0.1:{port}), logs in logs/train_rank*.log", flush=True)
    mp.spawn(worker, args=(port,), nprocs=WORLD)
