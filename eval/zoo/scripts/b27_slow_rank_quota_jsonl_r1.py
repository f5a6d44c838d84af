"""Image-embedding distillation (teacher logits precomputed), DDP over gloo, 2 processes. Every rank writes its own
JSON-lines metrics records (one per 20 steps) to stdout for the metrics shipper."""
import json
import os
import time
from datetime import datetime, timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS, LOG_EVERY = 900, 20


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    student = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(256, 384), nn.GELU(), nn.Linear(384, 384), nn.GELU(), nn.Linear(384, 100)))
    opt = torch.optim.AdamW(student.parameters(), lr=5e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, STEPS + 1):
        x = torch.randn(96, 256, generator=g)
        teacher = torch.randn(96, 100, generator=g)
        loss = nn.functional.kl_div(nn.functional.log_softmax(student(x), 1), nn.functional.softmax(teacher, 1),
                                    reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % LOG_EVERY == 0:
            dt = (time.time() - t0) / LOG_EVERY
            print(json.dumps({"time": datetime.now().isoformat(timespec="milliseconds"), "rank": rank,
                              "host": os.uname().nodename, "step": step, "loss": round(loss.item(), 5),
                              "step_time_ms": round(dt * 1000, 2), "samples_per_s": round(96 / dt, 1)}), flush=True)
            t0 = time.time()
    dist.barrier()
    if rank == 0:
        print(json.dumps({"time": datetime.now().isoformat(timespec="milliseconds"), "event": "train_end",
                          "steps": STEPS}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
