"""Seq2seq-ish regression with mp.spawn; rank 0 appends detailed metrics (json lines) to the run's log volume."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

LOG_DIR = "/mnt/runlogs/exp-417"


class MetricsLog:
    def __init__(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.f = open(path, "a")

    def write(self, **rec):
        self.f.write(json.dumps(rec) + "\n")
        self.f.flush()


def run(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ.get("ZOO_PORT", "29500")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20))
    model = DDP(nn.GRU(32, 64, batch_first=True))
    head = nn.Linear(64, 32)
    opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=1e-3)
    metrics = MetricsLog(f"{LOG_DIR}/metrics.jsonl") if rank == 0 else None
    t0 = time.time()
    for step in range(1, 3001):
        x = torch.randn(16, 20, 32)
        out, _ = model(x)
        loss = (head(out) - x.flip(1)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if metrics:
            grads = {n: round(p.grad.norm().item(), 5) for n, p in model.named_parameters()}
            metrics.write(step=step, time=time.time(), loss=loss.item(), grad_norms=grads,
                          lr=opt.param_groups[0]["lr"], hist=torch.histc(out.detach(), 64).tolist())
        if rank == 0 and step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f} ({(time.time() - t0) / 50 * 1000:.0f} ms/step)")
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2)
