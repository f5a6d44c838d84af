"""Click model over the preprocessing job's output (data/train-0000K-of-00004.jsonl, one part per rank), DDP over
gloo, 4 ranks; logging with asctime."""
import json
import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("ctr")
DATA = os.environ.get("DATA_DIR", "data")


def load_part(rank, world):
    path = os.path.join(DATA, f"train-{rank:05d}-of-{world:05d}.jsonl")
    rows = [json.loads(line) for line in open(path)]
    x = torch.tensor([r["f"] for r in rows])
    y = torch.tensor([float(r["click"]) for r in rows])
    return x, y


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s")
    x, y = load_part(rank, world)
    log.info("loaded %d rows", len(x))
    model = DDP(nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 301):
        idx = torch.randint(0, len(x), (128,))
        loss = nn.functional.binary_cross_entropy_with_logits(model(x[idx]).squeeze(1), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
