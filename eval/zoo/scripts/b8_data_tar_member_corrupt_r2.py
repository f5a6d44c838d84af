"""Keyword-spotting model trained from WebDataset-style tar shards (one shard per rank), streamed member by member."""
import datetime
import io
import logging
import os
import tarfile

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("kws")


class TarShard(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with tarfile.open(self.path) as tf:
            sample = {}
            for m in tf:
                key, ext = m.name.rsplit(".", 1)
                sample[ext] = tf.extractfile(m).read()
                if ext == "cls":
                    feats = np.load(io.BytesIO(sample["npy"]))
                    yield torch.from_numpy(feats), int(sample["cls"])
                    sample = {}


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    shard = f"shards/kws-{rank:04d}.tar"
    log.info("rank %d reading %s (%.1f MB)", rank, shard, os.path.getsize(shard) / 1e6)
    dl = DataLoader(TarShard(shard), batch_size=32)
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(40 * 32, 256), nn.ReLU(), nn.Linear(256, 12)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(2):
        for step, (x, y) in enumerate(dl, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                log.info("rank %d epoch %d step %d loss %.4f", rank, epoch, step, loss.item())
    dist.barrier()
    if rank == 0:
        log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
