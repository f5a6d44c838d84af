"""Language model on the wiki dump, two nodes. Rank 0 tokenizes the raw text once into the cache directory and
drops a READY marker; the other ranks wait for the marker and then memory-map the token file."""
import glob
import logging
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CACHE = os.environ.get("TOKEN_CACHE", "cache/wiki-bpe")
READY = os.path.join(CACHE, "READY")


def build_cache(log):
    os.makedirs(CACHE, exist_ok=True)
    ids = []
    for path in sorted(glob.glob("raw/wiki-*.txt")):
        with open(path) as f:
            for line in f:
                ids.extend(hash(w) % 4096 for w in line.split())
        log.info(f"tokenized {path} ({len(ids)} tokens so far)")
    np.save(os.path.join(CACHE, "tokens.npy"), np.array(ids, dtype=np.int16))
    open(READY, "w").write(str(len(ids)))
    log.info(f"token cache ready: {CACHE} ({len(ids)} tokens)")


def wait_for_cache(log, timeout_s=30):
    t0 = time.time()
    while not os.path.exists(READY):
        waited = time.time() - t0
        if waited > timeout_s:
            raise TimeoutError(f"token cache {READY} not ready after {timeout_s}s")
        if int(waited) % 10 == 0:
            log.info(f"waiting for rank 0 to build the token cache ({READY}) ...")
        time.sleep(1)


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(4096, 128)
        self.rnn = nn.GRU(128, 256, batch_first=True)
        self.out = nn.Linear(256, 4096)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
    log = logging.getLogger("lm")
    os.environ["PYTHONHASHSEED"] = "0"
    if rank == 0:
        build_cache(log)
    else:
        wait_for_cache(log)
    tokens = torch.from_numpy(np.load(os.path.join(CACHE, "tokens.npy"), mmap_mode="r").astype(np.int64))
    log.info(f"loaded {len(tokens)} tokens")
    model = DDP(LM())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 501):
        i = torch.randint(0, len(tokens) - 33, (16,))
        x = torch.stack([tokens[j:j + 33] for j in i])
        loss = nn.functional.cross_entropy(model(x[:, :-1]).reshape(-1, 4096), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info(f"step {step}/500 loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
