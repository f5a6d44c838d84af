"""Query auto-complete model: each rank counts the word bigrams of its log shard to build the candidate table,
then trains a small next-word model. DDP over gloo, torch.multiprocessing.spawn, tqdm per rank."""
import argparse
import collections
import random
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm


def shard_lines(rank, n):
    rng = random.Random(rank)
    vocab = [f"w{i}" for i in range(60000)]
    for _ in range(n):
        yield [rng.choice(vocab) for _ in range(rng.randint(3, 9))]


def worker(rank, world, port, lines):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    counts = collections.Counter()
    for words in tqdm(shard_lines(rank, lines), total=lines, desc=f"[rank {rank}] counting bigrams",
                      position=rank, mininterval=2.0):
        counts.update(zip(words, words[1:]))
    table = {bg: i for i, (bg, c) in enumerate(counts.most_common()) if c >= 1}
    print(f"[rank {rank}] {len(table)} candidate bigrams")
    model = DDP(nn.Sequential(nn.Embedding(60000, 64), nn.Linear(64, 60000)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for step in tqdm(range(200), desc=f"[rank {rank}] train", position=rank, mininterval=2.0):
        x = torch.randint(0, 60000, (64,), generator=g)
        loss = nn.functional.cross_entropy(model(x), (x * 7) % 60000)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=29500)
    p.add_argument("--lines", type=int, default=1_500_000)
    a = p.parse_args()
    mp.spawn(worker, args=(2, a.port, a.lines), nprocs=2)
