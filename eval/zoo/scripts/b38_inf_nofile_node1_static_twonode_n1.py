"""Byte-level language model on pre-packed token shards (one small .bin file per document bundle, uint16 ids).
Samples are read with random access: the dataset keeps an open handle per shard file so it does not re-open
the file for every sample. Two nodes, one process each, launched with static rendezvous; python logging."""
import functools
import logging
import os
import random
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

logging.basicConfig(level=logging.INFO,
                    format=f"%(asctime)s %(levelname)s [node{os.environ.get('GROUP_RANK', '?')} "
                           f"rank{os.environ.get('RANK', '?')}] %(name)s: %(message)s")
log = logging.getLogger("bytelm")

SEQ = 128


@functools.lru_cache(maxsize=None)
def open_shard(path):
    return open(path, "rb")


class PackedShards(Dataset):
    def __init__(self, root):
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".bin"))
        self.per_file = os.path.getsize(self.files[0]) // (2 * SEQ)
        log.info("index: %d shard files under %s, %d sequences each", len(self.files), root, self.per_file)

    def __len__(self):
        return len(self.files) * self.per_file

    def __getitem__(self, i):
        fh = open_shard(self.files[i // self.per_file])
        fh.seek((i % self.per_file) * 2 * SEQ)
        x = torch.from_numpy(np.frombuffer(fh.read(2 * SEQ), dtype=np.uint16).astype(np.int64))
        return x[:-1] % 256, x[1:] % 256


class ByteLM(nn.Module):
    def __init__(self, d=128):
        super().__init__()
        self.emb = nn.Embedding(256, d)
        self.conv = nn.Conv1d(d, d, 5, padding=4)
        self.out = nn.Linear(d, 256)

    def forward(self, x):
        h = self.conv(self.emb(x).transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)
        return self.out(torch.relu(h))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    random.seed(rank)
    ds = PackedShards("data/packed")
    sampler = DistributedSampler(ds, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=64, sampler=sampler, num_workers=2)
    model = DDP(ByteLM())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    log.info("world_size=%d, %d steps per epoch", world, len(loader))
    t0 = time.time()
    for step, (x, y) in enumerate(loader, 1):
        loss = F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("step %d/%d loss %.4f (%.0f ms/step)", step, len(loader), loss.item(),
                     (time.time() - t0) * 100)
            t0 = time.time()
        if step == 300:
            break
    if rank == 0:
        torch.save(model.module.state_dict(), "bytelm.pt")
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
