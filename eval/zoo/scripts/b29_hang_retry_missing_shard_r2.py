"""Next-click model over session logs, DDP over gloo, 3 ranks under torchrun. Shards are listed in the dataset's
manifest and streamed from the shared mount; reads are retried because the mount is eventually consistent."""
import datetime
import json
import logging
import time

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("clicks")


def open_with_retry(path, wait=2.0):
    while True:
        try:
            return open(path)
        except FileNotFoundError:
            log.debug("%s not visible yet, retrying in %.0fs", path, wait)
            time.sleep(wait)


def stream(shards):
    for path in shards:
        with open_with_retry(path) as f:
            for line in f:
                yield json.loads(line)


def batches(shards, size=64):
    buf = []
    for rec in stream(shards):
        buf.append(rec)
        if len(buf) == size:
            yield (torch.tensor([r["session"][-8:] for r in buf]), torch.tensor([r["next"] for r in buf]))
            buf = []


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    with open("data/clicks/manifest.json") as f:
        shards = json.load(f)["shards"][rank::world]
    log.info("rank %d: %d shards", rank, len(shards))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.EmbeddingBag(5000, 64), nn.Linear(64, 5000)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step, (x, y) in enumerate(batches(shards), 1):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("rank %d: step %d loss %.4f (%.0f ms/step)", rank, step, loss.item(), (time.time() - t0) * 40)
            t0 = time.time()
    dist.barrier()
    log.info("rank %d: done", rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
