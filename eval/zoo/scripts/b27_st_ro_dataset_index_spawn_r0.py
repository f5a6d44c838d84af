"""Click-through model on line-delimited JSON shards, DDP over gloo under torch.multiprocessing.spawn. Rank 0 builds
the byte-offset index of each shard (written next to the shard, reused by later runs); the others wait for it."""
import json
import logging
import os
import sys
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)s %(processName)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("ctr")
DATA = "datasets/ctr-2026-11"


def build_index(shard):
    idx = shard + ".idx"
    if os.path.exists(idx):
        return
    offsets, pos = [], 0
    with open(shard, "rb") as f:
        for line in f:
            offsets.append(pos)
            pos += len(line)
    np.save(idx, np.array(offsets, dtype=np.int64))
    os.replace(idx + ".npy", idx)


def worker(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    shards = sorted(os.path.join(DATA, f) for f in os.listdir(DATA) if f.endswith(".jsonl"))
    log.info("rank %d: %d shards under %s", rank, len(shards), DATA)
    if rank == 0:
        for s in shards:
            build_index(s)
            log.info("indexed %s", os.path.basename(s))
    dist.barrier()
    mine = shards[rank::world]
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.EmbeddingBag(100000, 32), nn.Linear(32, 1)))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    for s in mine:
        offs = np.load(s + ".idx")
        with open(s) as f:
            rows = [json.loads(f.readline()) for _ in range(len(offs))]
        for i in range(0, len(rows) - 255, 256):
            b = rows[i:i + 256]
            x = torch.tensor([r["f"] for r in b])
            y = torch.tensor([float(r["y"]) for r in b])
            loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        log.info("rank %d: %s done, loss %.4f", rank, os.path.basename(s), loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1])), nprocs=2)
