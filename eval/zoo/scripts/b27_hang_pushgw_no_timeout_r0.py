"""Learning-to-rank model (listwise softmax loss), DDP over gloo, 2 processes. Rank 0 pushes the training metrics
to the team's Prometheus Pushgateway every 100 steps (address in monitoring.yaml)."""
import json
import logging
import time
import urllib.request
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
log = logging.getLogger("ltr")


def pushgateway():
    for line in open("monitoring.yaml"):
        k, _, v = line.partition(":")
        if k.strip() == "pushgateway":
            return v.strip()


def push_metrics(addr, metrics):
    body = "".join(f"ltr_{k} {v}\n" for k, v in metrics.items()).encode()
    req = urllib.request.Request(f"http://{addr}/metrics/job/ltr-train/instance/rank0", data=body, method="PUT")
    with urllib.request.urlopen(req) as resp:
        return resp.status


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    gw = pushgateway()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(136, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 1001):
        x = torch.randn(32, 40, 136, generator=g)  # 32 queries x 40 documents
        rel = torch.randint(0, 5, (32, 40), generator=g).float()
        scores = model(x).squeeze(-1)
        loss = -(torch.softmax(rel, 1) * torch.log_softmax(scores, 1)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("rank %d step %d loss %.4f (%.1f ms/step)", rank, step, loss.item(), (time.time() - t0) / 50 * 1000)
            t0 = time.time()
        if step % 100 == 0 and rank == 0:
            push_metrics(gw, {"loss": round(loss.item(), 5), "step": step})
    dist.destroy_process_group()
    if rank == 0:
        log.info("done: %s", json.dumps({"steps": 1000}))


if __name__ == "__main__":
    main()
