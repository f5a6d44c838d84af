"""Causal LM pretraining on a small corpus, DDP over gloo. Rank 0 tokenizes the corpus once into the node's
scratch cache; the other ranks wait and memory-map it."""
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

CACHE = "scratch/cache/corpus-tok-v2.npy"


def tokenize(path):
    vocab = {}
    ids = []
    lines = open(path).read().splitlines()
    for line in tqdm(lines, desc="tokenizing", unit="line", mininterval=1.0):
        for w in line.split():
            ids.append(vocab.setdefault(w, len(vocab) % 16000))
    return np.asarray(ids, dtype=np.int64)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    print(f"[{time.strftime('%H:%M:%S')}] rank {rank}: started", flush=True)
    if rank == 0 and not os.path.exists(CACHE):
        toks = tokenize("data/corpus.txt")
        print(f"[{time.strftime('%H:%M:%S')}] rank 0: {len(toks):,} tokens, writing {CACHE}", flush=True)
        os.makedirs(os.path.dirname(CACHE), exist_ok=True)
        np.save(CACHE, toks)
    dist.barrier()
    toks = torch.from_numpy(np.load(CACHE, mmap_mode="r")[:2_000_000].copy())
    model = DDP(nn.Sequential(nn.Embedding(16000, 128), nn.Linear(128, 16000)))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(1, 201):
        i = torch.randint(0, len(toks) - 65, (16,))
        x = torch.stack([toks[j:j + 65] for j in i])
        loss = nn.functional.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[{time.strftime('%H:%M:%S')}] rank {rank}: step {step}/200 loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
