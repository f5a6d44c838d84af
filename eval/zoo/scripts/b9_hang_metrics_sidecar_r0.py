"""Text classifier; rank 0 streams per-step metrics to the node's metrics agent through a named pipe."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

METRICS_PIPE = os.environ.get("METRICS_PIPE", "run/metrics.pipe")


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.EmbeddingBag(8000, 96), nn.Linear(96, 4)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sink = open(METRICS_PIPE, "w") if rank == 0 else None
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 1001):
        x = torch.randint(0, 8000, (32, 24), generator=g)
        y = torch.randint(0, 4, (32,), generator=g)
        t = time.time()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sink:
            grads = {n: round(p.grad.norm().item(), 5) for n, p in model.named_parameters()}
            sink.write(json.dumps({"step": step, "loss": loss.item(), "time": time.time(), "grad_norm": grads,
                                   "lr": opt.param_groups[0]["lr"], "host": os.uname().nodename,
                                   "tags": ["textcls", "exp-42", "gloo"] * 20}) + "\n")
            sink.flush()
        if step % 25 == 0:
            print(f"[rank {rank}] step {step}/1000 loss {loss.item():.4f} {1000 * (time.time() - t):.1f} ms")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
