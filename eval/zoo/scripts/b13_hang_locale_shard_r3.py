"""Review-sentiment classifier, DDP over gloo, 4 ranks. The review dump is split into 12 shards; epoch e on rank r
reads shard (e * world + r), keeping English reviews of at least 5 words. A rank repeats its shard when it is short,
so every rank does the same number of steps per epoch."""
import hashlib
import json
import logging
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger(__name__)
STEPS_PER_EPOCH = 60
BS = 32
DIM = 4096


def reviews(path):
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["lang"] == "en" and len(r["text"].split()) >= 5:
                yield r


def batches(path):
    buf = []
    n = 0
    while n < STEPS_PER_EPOCH:
        for r in reviews(path):
            buf.append(r)
            if len(buf) == BS:
                yield buf
                buf, n = [], n + 1
                if n == STEPS_PER_EPOCH:
                    return


def featurize(batch):
    x = torch.zeros(len(batch), DIM)
    for i, r in enumerate(batch):
        for w in r["text"].lower().split():
            x[i, int(hashlib.md5(w.encode()).hexdigest()[:6], 16) % DIM] += 1
    return x, torch.tensor([float(r["stars"] >= 4) for r in batch])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s - %(levelname)s - %(name)s - [rank{rank}] %(message)s")
    model = DDP(nn.Sequential(nn.Linear(DIM, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        shard = f"reviews/shard-{epoch * world + rank:02d}.jsonl"
        log.info("epoch %d: reading %s", epoch, shard)
        t0 = time.time()
        for step, batch in enumerate(batches(shard), 1):
            x, y = featurize(batch)
            loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                log.info("epoch %d step %d/%d loss %.4f %.0f ms/step", epoch, step, STEPS_PER_EPOCH, loss.item(),
                         (time.time() - t0) * 50)
                t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
