"""Click-through ranking model (DDP over gloo), one JSON object per log line for the log shipper.
Graceful stop: `touch STOP` in the run directory and the job saves and ends at the next check."""
import json
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
CHECK_EVERY_S = 5.0


def jlog(event, **kw):
    print(json.dumps({"ts": round(time.time(), 3), "rank": RANK, "event": event, **kw}), flush=True)


def main():
    rows = [json.loads(line) for line in open(f"data/impressions-{RANK}.jsonl")]
    jlog("data", rows=len(rows))
    last_check = time.time()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(20000, 32, mode="sum"), nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
    g = torch.Generator().manual_seed(RANK)
    jlog("start", world_size=dist.get_world_size(), params=sum(p.numel() for p in model.parameters()))
    t0 = time.time()
    for step in range(1, 5001):
        batch = [rows[i] for i in torch.randint(0, len(rows), (256,), generator=g).tolist()]
        ids = torch.tensor([r["ids"] for r in batch])
        y = torch.tensor([float(r["click"]) for r in batch])
        loss = nn.functional.binary_cross_entropy_with_logits(model(ids).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            jlog("train", step=step, loss=round(loss.item(), 4), step_ms=round((time.time() - t0) / 50 * 1000, 1))
            t0 = time.time()
        if time.time() - last_check > CHECK_EVERY_S:
            last_check = time.time()
            if os.path.exists("STOP"):
                jlog("stop_requested", step=step)
                break
    if RANK == 0:
        torch.save({"model": model.module.state_dict(), "step": step}, "ctr_last.pt")
        jlog("checkpoint", path="ctr_last.pt", step=step)
    jlog("exit", step=step)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
