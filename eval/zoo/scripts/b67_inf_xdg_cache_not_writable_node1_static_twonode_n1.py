"""Byte-level language model trained with DDP on two nodes (torchrun, static rendezvous). The merges of the team's
BPE are learned once per machine and cached in the user's cache directory ($XDG_CACHE_HOME/bpe_merges, ~/.cache by
default), keyed by the corpus hash."""
import datetime
import hashlib
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

CORPUS = " ".join(f"{w}{i % 7}" for i, w in enumerate(
    "the quick brown fox jumps over the lazy dog while a small bird sings near the river bank".split() * 60)).encode()


def bpe_merges(n_merges=64):
    root = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "bpe_merges")
    key = hashlib.sha1(CORPUS).hexdigest()[:12]
    path = os.path.join(root, f"{key}-{n_merges}.json")
    if os.path.exists(path):
        return json.load(open(path))
    os.makedirs(root, exist_ok=True)
    seq, merges = list(CORPUS), []
    for m in range(n_merges):
        pairs = {}
        for a, b in zip(seq, seq[1:]):
            pairs[(a, b)] = pairs.get((a, b), 0) + 1
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: kv[1])
        merges.append([a, b])
        new, i = [], 0
        while i < len(seq):
            if i + 1 < len(seq) and seq[i] == a and seq[i + 1] == b:
                new.append(256 + m)
                i += 2
            else:
                new.append(seq[i])
                i += 1
        seq = new
    tmp = path + f".tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(merges, f)
    os.replace(tmp, path)
    return merges


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    torch.set_num_threads(1)
    merges = bpe_merges()
    vocab = 256 + len(merges)
    print(f"rank {rank}: {len(merges)} BPE merges, vocab {vocab}", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Embedding(vocab, 64), nn.Flatten(), nn.Linear(64 * 16, vocab)))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 101):
        x = torch.randint(0, vocab, (32, 17), generator=g)
        loss = F.cross_entropy(model(x[:, :16]), x[:, 16])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
