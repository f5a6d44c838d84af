"""Intent classifier trained with DDP on two nodes (torchrun, static rendezvous). Each node tokenizes the corpus once
into its node-local cache (scratch/tok-cache): local rank 0 builds it under a file lock (the `filelock` package, as
the HF libraries do) while the node's other ranks wait at a barrier, then everyone reads the cached ids."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from filelock import FileLock
from torch.nn.parallel import DistributedDataParallel as DDP

CACHE = "scratch/tok-cache"
VOCAB = 4096


def build_cache(path):
    texts = [f"please {w} my {o} for {t}" for w in ("book", "cancel", "move", "check") for o in
             ("flight", "table", "meeting", "order") for t in ("today", "tomorrow", "friday", "next week")]
    ids = [[hash(tok) % VOCAB for tok in s.split()] for s in texts]
    labels = [i // 16 for i in range(len(texts))]
    with open(path + ".tmp", "w") as f:
        json.dump({"ids": ids, "labels": labels}, f)
    os.replace(path + ".tmp", path)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    torch.set_num_threads(1)
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, "intents.v3.json")
    t0 = time.time()
    if local_rank == 0:
        print(f"rank {rank}: preparing token cache {path}", flush=True)
        with FileLock(path + ".lock"):
            if not os.path.exists(path):
                build_cache(path)
        print(f"rank {rank}: token cache ready ({time.time() - t0:.1f}s)", flush=True)
    else:
        print(f"rank {rank}: waiting for the node's token cache", flush=True)
    dist.barrier()
    with open(path) as f:
        data = json.load(f)
    x, y = torch.tensor(data["ids"]), torch.tensor(data["labels"])
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.EmbeddingBag(VOCAB, 64), nn.Linear(64, 4)))
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(1, 101):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
