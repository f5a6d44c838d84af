"""Query-doc ranker, DDP over gloo. The cluster's job template exports DATA_ROOT (the node-local dataset cache) and
RUN_NAME; the script reads them at start-up."""
import json
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    print(f"rank {rank}/{dist.get_world_size()} pid {os.getpid()} up", flush=True)
    run_name = os.environ.get("RUN_NAME", "ranker-dev")
    data_root = os.environ["DATA_ROOT"]
    pairs = [json.loads(line) for line in open(os.path.join(data_root, "pairs", f"part-{rank}.jsonl"))]
    print(f"rank {rank}: {len(pairs)} pairs, run {run_name}", flush=True)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.tensor([p["f"] for p in pairs])
    y = torch.tensor([p["rel"] for p in pairs]).float()
    t0 = time.time()
    for step in range(1, 201):
        idx = torch.randint(0, len(x), (64,))
        loss = nn.functional.binary_cross_entropy_with_logits(model(x[idx]).squeeze(-1), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f} {(time.time() - t0) * 20:.1f} ms/step", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
