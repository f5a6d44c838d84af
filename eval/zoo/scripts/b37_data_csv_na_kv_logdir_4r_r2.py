"""Demand forecaster (MLP on lagged sensor features) trained on daily CSV partitions exported by the warehouse
job: one partition per day, each rank reads its own part file of the day. Structured key=value log lines (the
platform's log shipper parses logfmt)."""
import csv
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

DAYS = ["2026-11-28", "2026-11-29", "2026-11-30"]
FEATURES = [f"lag_{k}" for k in range(1, 13)] + ["temp_c", "humidity", "is_holiday"]


class KV(logging.Formatter):
    def format(self, record):
        fields = {"ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), "level": record.levelname.lower(),
                  "logger": record.name, "rank": os.environ.get("RANK", "0"), "msg": record.getMessage()}
        fields.update(getattr(record, "kv", {}))
        return " ".join(f'{k}="{v}"' if isinstance(v, str) and " " in v else f"{k}={v}" for k, v in fields.items())


h = logging.StreamHandler(sys.stdout)
h.setFormatter(KV())
logging.basicConfig(level=logging.INFO, handlers=[h])
log = logging.getLogger("forecast")


def read_partition(day, rank):
    path = f"data/dt={day}/part-{rank:05d}.csv"
    xs, ys = [], []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            xs.append([float(row[c]) for c in FEATURES])
            ys.append(float(row["demand"]))
    log.info("partition loaded", extra={"kv": {"path": path, "rows": len(xs)}})
    return torch.tensor(xs), torch.tensor(ys)[:, None]


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(len(FEATURES), 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    log.info("start", extra={"kv": {"world_size": world, "days": len(DAYS)}})
    step = 0
    for day in DAYS:
        x, y = read_partition(day, rank)
        t0 = time.time()
        for i in range(0, len(x) - 63, 64):
            loss = nn.functional.mse_loss(model(x[i:i + 64]), y[i:i + 64])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 20 == 0:
                log.info("train", extra={"kv": {"day": day, "step": step, "loss": f"{loss.item():.4f}",
                                                "ms_per_step": f"{(time.time() - t0) / 20 * 1000:.1f}"}})
                t0 = time.time()
        log.info("day done", extra={"kv": {"day": day, "step": step}})
    if rank == 0:
        torch.save(model.module.state_dict(), "forecaster.pt")
    log.info("finished", extra={"kv": {"steps": step}})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
