"""Query-intent classifier, DDP over gloo, 2 ranks; each rank streams its training records from
$STREAM_DIR/part-<rank>.jsonl (the platform's fetcher feeds it) and logs JSON lines."""
import datetime
import json
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def jlog(**kw):
    print(json.dumps({"ts": datetime.datetime.now().isoformat(timespec="milliseconds"), "host": socket.gethostname(),
                      **kw}), flush=True)


def records(path):
    with open(path) as f:
        for line in f:
            yield json.loads(line)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.EmbeddingBag(30000, 64), nn.Linear(64, 48)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    path = os.path.join(os.environ.get("STREAM_DIR", "stream"), f"part-{rank}.jsonl")
    jlog(level="INFO", rank=rank, event="start", source=path)
    it = records(path)
    t0 = time.time()
    for step in range(1, 401):
        batch = [next(it) for _ in range(32)]
        x = torch.tensor([r["q"] for r in batch])
        y = torch.tensor([r["intent"] for r in batch])
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            jlog(level="INFO", rank=rank, step=step, loss=round(loss.item(), 4),
                 step_ms=round((time.time() - t0) / 20 * 1000, 1))
            t0 = time.time()
    dist.barrier()
    jlog(level="INFO", rank=rank, event="done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
