"""Product-attribute tagger (embedding bag + MLP), DDP over gloo, one process per node. Each rank streams its own
part of the tagged catalogue export (data/part-<rank>.jsonl) line by line; rank 0 logs every 50 steps."""
import json
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("tagger")
VOCAB, TAGS, MAXLEN = 12000, 40, 48


def batches(path, bs=32):
    buf = []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            ids = [hash(w) % VOCAB for w in rec["title"].split()][:MAXLEN]
            buf.append((ids + [0] * (MAXLEN - len(ids)), rec["tag"]))
            if len(buf) == bs:
                yield torch.tensor([b[0] for b in buf]), torch.tensor([b[1] for b in buf])
                buf = []


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("rank %d/%d on %s, local rank %s", rank, world, os.uname().nodename, os.environ["LOCAL_RANK"])
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.EmbeddingBag(VOCAB, 96), nn.Linear(96, 256), nn.ReLU(), nn.Linear(256, TAGS)))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    t0 = time.time()
    for step, (x, y) in enumerate(batches(f"data/part-{rank}.jsonl"), 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 50 == 0:
            log.info("step %d loss %.4f (%.1f ms/step)", step, loss.item(), (time.time() - t0) / step * 1000)
    log.info("rank %d done", rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
