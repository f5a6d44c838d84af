"""Product-title encoder, DDP over gloo across two nodes (one process each). Each node's first local process
builds the tokenized cache on the node's local scratch disk under an exclusive lock, the node's other processes
reuse it."""
import fcntl
import logging
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)-5s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("titles")


def build_cache(scratch):
    os.makedirs(scratch, exist_ok=True)
    path = os.path.join(scratch, "titles-tok.npy")
    with open(os.path.join(scratch, "tok-cache.lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        if not os.path.exists(path):
            rng = np.random.default_rng(0)
            np.save(path, rng.integers(1, 16000, size=(20000, 24)))
        fcntl.flock(lk, fcntl.LOCK_UN)
    return np.load(path)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=25))
    rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])
    scratch = os.environ.get("LOCAL_SCRATCH", "/scratch")
    log.info("rank %d on node %d, local scratch %s", rank, node, scratch)
    toks = torch.from_numpy(build_cache(scratch))
    log.info("rank %d: %d titles in cache", rank, len(toks))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.EmbeddingBag(16000, 96), nn.Linear(96, 96)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(1, 301):
        idx = torch.randint(0, len(toks), (128,))
        z = model(toks[idx])
        loss = -nn.functional.log_softmax(z @ z.t(), 1).diagonal().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
