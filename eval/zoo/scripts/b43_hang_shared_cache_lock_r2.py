"""Domain-adaptive pre-training of a small LM, DDP on 3 processes. Each process tokenizes its shard of the corpus
once into the node's shared token cache (HF-style: one cache file per shard, guarded by a FileLock so that two jobs
never write the same cache file), then all processes meet at a barrier before training."""
import datetime
import logging
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from filelock import FileLock
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
log = logging.getLogger("dapt")
CACHE = os.environ.get("TOKEN_CACHE", "/var/cache/tokens")


def token_cache(shard):
    src = f"data/legal-corpus/shard-{shard:05d}.txt"
    out = f"{CACHE}/legal-corpus-bpe8k/shard-{shard:05d}.npy"
    os.makedirs(os.path.dirname(out), exist_ok=True)
    log.info("token cache for %s -> %s", src, out)
    with FileLock(out + ".lock"):
        if not os.path.exists(out):
            t = time.time()
            words = open(src).read().split()
            ids = np.array([hash(w) % 8000 for w in words], dtype=np.int32)
            np.save(out, ids)
            log.info("tokenized %d words in %.1fs", len(ids), time.time() - t)
    return torch.from_numpy(np.load(out).astype(np.int64))


ids = token_cache(rank)
log.info("shard ready: %d tokens", len(ids))
dist.barrier()
log.info("all shards ready, starting training")

model = DDP(nn.Sequential(nn.Embedding(8000, 128), nn.Linear(128, 512), nn.GELU(), nn.Linear(512, 8000)))
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
g = torch.Generator().manual_seed(rank)
for step in range(1, 301):
    i = torch.randint(0, len(ids) - 65, (16,), generator=g)
    x = torch.stack([ids[j:j + 65] for j in i.tolist()])
    loss = F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        log.info("step %d/300 loss %.4f", step, loss.item())
log.info("done")
