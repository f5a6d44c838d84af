"""Tabular click model whose training rows live on the team's shared dataset volume, served on each node through
the volume's local gateway (an HTTP endpoint); every step fetches its batch's rows. One JSON log line per 20 steps."""
import datetime
import io
import json
import os
import time
import urllib.request

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

GATEWAY = json.load(open("volume.json"))["gateway"]  # written by the node's volume agent


def fetch(part, chunk):
    with urllib.request.urlopen(f"{GATEWAY}/clicks/part-{part:02d}/chunk-{chunk:04d}.npy", timeout=60) as r:
        return np.load(io.BytesIO(r.read()))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(nn.Sequential(nn.Linear(63, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                              nn.Linear(1024, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data_ms = step_ms = 0.0
    t_prev = time.time()
    for step in range(1, 601):
        t0 = time.time()
        arr = torch.from_numpy(fetch(rank, step % 200))
        t1 = time.time()
        loss = nn.functional.binary_cross_entropy_with_logits(model(arr[:, :63]).squeeze(1), arr[:, 63])
        opt.zero_grad()
        loss.backward()
        opt.step()
        data_ms += (t1 - t0) * 1000
        step_ms += (time.time() - t0) * 1000
        if step % 20 == 0:
            print(json.dumps({"time": datetime.datetime.now().isoformat(timespec="seconds"), "rank": rank, "step": step,
                              "loss": round(loss.item(), 4), "data_ms": round(data_ms / 20, 1),
                              "step_ms": round(step_ms / 20, 1), "wall_s": round(time.time() - t_prev, 2)}), flush=True)
            data_ms = step_ms = 0.0
            t_prev = time.time()
    dist.barrier()
    print(json.dumps({"rank": rank, "event": "done", "steps": 600}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
