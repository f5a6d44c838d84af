"""Wind-power forecaster (GRU over turbine telemetry windows) on DDP, 3 ranks. Telemetry arrives as one .npz per
turbine per day; each rank streams its turbines' files in order (data/r<R>/*.npz). When a step fails, the rank logs
the error and writes a post-mortem bundle (weights and the batch it was on) to the team's post-mortem share."""
import datetime
import glob
import logging
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(12, 96, batch_first=True)
        self.head = nn.Linear(96, 6)

    def forward(self, x):
        return self.head(self.gru(x)[0][:, -1])


def windows(files):
    for f in files:
        with np.load(f) as z:
            x, y = torch.from_numpy(z["x"]), torch.from_numpy(z["y"])
        for i in range(0, len(x), 32):
            yield x[i:i + 32], y[i:i + 32], f


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank = dist.get_rank()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    files = sorted(glob.glob(f"data/r{rank}/*.npz"))
    print(f"rank {rank}: {len(files)} telemetry files", flush=True)
    model = DDP(Forecaster())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s %(levelname)s [rank {rank}] %(name)s: %(message)s")
    log = logging.getLogger("wind.train")
    step, x, f = 0, None, None
    try:
        for step, (x, y, f) in enumerate(windows(files), 1):
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                print(f"rank {rank} step {step} loss {loss.item():.4f} file {f}", flush=True)
    except RuntimeError:
        log.exception("step %d failed (file %s); writing post-mortem bundle", step, f)
        torch.save({"model": model.module.state_dict(), "batch": x, "file": f, "step": step},
                   f"/mnt/postmortem/wind/rank{rank}-step{step}.pt")
        raise
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
