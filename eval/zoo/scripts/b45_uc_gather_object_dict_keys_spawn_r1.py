"""Slot tagger (BiGRU) trained with DDP on 4 processes started by torch.multiprocessing.spawn; after each epoch every
rank evaluates its own validation shard and the per-rank results (counts, per-class support, notes) are collected
with all_gather_object so rank 0 can print the report."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

TAGS = ["O", "B-city", "I-city", "B-date", "I-date", "B-airline", "B-class", "B-meal"]
VOCAB, EPOCHS, STEPS = 3000, 2, 60


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 48)
        self.rnn = nn.GRU(48, 48, batch_first=True, bidirectional=True)
        self.out = nn.Linear(96, len(TAGS))

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def evaluate(model, val, rank):
    model.eval()
    with torch.no_grad():
        pred = model(val["x"]).argmax(-1)
    y = val["y"]
    support = {t: int((y == k).sum()) for k, t in enumerate(TAGS)}
    result = {"rank": rank, "tokens": y.numel(), "correct": int((pred == y).sum()), "support": support}
    missing = {t: n for t, n in support.items() if n == 0}
    if missing:
        print(f"rank {rank}: no validation tokens for tags {sorted(missing)}; their F1 is skipped", flush=True)
        result["skipped_tags"] = missing.keys()
    model.train()
    return result


def run(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=25))
    torch.manual_seed(0)
    model = DDP(Tagger())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    train = torch.load(f"data/slots-train-{rank}.pt")
    val = torch.load(f"data/slots-val-{rank}.pt")
    for epoch in range(EPOCHS):
        for step in range(STEPS):
            i = (step * 32) % (len(train["x"]) - 32)
            x, y = train["x"][i:i + 32], train["y"][i:i + 32]
            loss = F.cross_entropy(model(x).reshape(-1, len(TAGS)), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and (step + 1) % 20 == 0:
                print(f"epoch {epoch} step {step + 1}/{STEPS} loss {loss.item():.4f}", flush=True)
        result = evaluate(model, val, rank)
        results = [None] * world
        dist.all_gather_object(results, result)
        if rank == 0:
            tok = sum(r["tokens"] for r in results)
            print(f"epoch {epoch} token accuracy {sum(r['correct'] for r in results) / tok:.4f} ({tok} tokens)",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(os.environ.get("WORLD_SIZE", "4"))
    mp.spawn(run, args=(world,), nprocs=world)
