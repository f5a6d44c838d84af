"""Two-node DDP (one process per node) on a small text classifier; every rank logs its step metrics to the team's
MLflow-style tracking server (REST, port 5000 on the head node) every 20 steps. logfmt lines on stdout."""
import datetime
import json
import os
import time
import urllib.request

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

TRACKING_URI = os.environ.get("TRACKING_URI", "http://10.77.0.1:5000")


def logfmt(level, **kv):
    ts = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    print(f"time={ts} level={level} " + " ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


def log_metrics(run_id, rank, step, metrics):
    body = json.dumps({"run_id": run_id, "metrics": [{"key": f"{k}/rank{rank}", "value": v, "step": step,
                                                       "timestamp": int(time.time() * 1000)}
                                                      for k, v in metrics.items()]}).encode()
    req = urllib.request.Request(f"{TRACKING_URI}/api/2.0/mlflow/runs/log-batch", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    logfmt("info", msg="\"process group ready\"", rank=rank, world=dist.get_world_size(),
           ifname=os.environ.get("GLOO_SOCKET_IFNAME", "-"))
    model = DDP(nn.Sequential(nn.EmbeddingBag(20000, 64), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    run_id = "4f1c2a9e0d7b4c3e"
    t = time.time()
    for step in range(1, 601):
        x = torch.randint(0, 20000, (64, 32), generator=g)
        y = x[:, 0] % 4
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            ms = (time.time() - t) * 50
            t = time.time()
            logfmt("info", rank=rank, step=step, loss=f"{loss.item():.4f}", step_ms=f"{ms:.1f}")
            log_metrics(run_id, rank, step, {"loss": loss.item(), "step_ms": ms})
    logfmt("info", rank=rank, msg="\"training finished\"")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
