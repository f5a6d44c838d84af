"""Support-ticket intent classifier: hashed word ids padded to 64 by a hand-written collate_fn, DataLoader with 2
workers per rank, DDP over gloo, started with torch.multiprocessing.spawn; tqdm bar on rank 0."""
import argparse
import datetime
import json
import os
import zlib

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from tqdm import tqdm

MAX_LEN = 64
VOCAB = 30000


class Tickets(Dataset):
    def __init__(self, path):
        self.rows = [json.loads(line) for line in open(path)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        return [zlib.crc32(w.encode()) % VOCAB for w in r["text"].split()], r["intent"]


def pad_collate(batch):
    ids = [seq + [0] * (MAX_LEN - len(seq)) for seq, _ in batch]
    return torch.tensor(ids), torch.tensor([y for _, y in batch])


def run(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    ds = Tickets("data/tickets_train.jsonl")
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=2, collate_fn=pad_collate)
    model = DDP(nn.Sequential(nn.EmbeddingBag(VOCAB, 64, mode="mean"), nn.Linear(64, 24)))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        bar = tqdm(loader, desc=f"epoch {epoch}", disable=rank != 0, mininterval=0.5)
        for x, y in bar:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
    if rank == 0:
        print("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=29500)
    ap.add_argument("--world-size", type=int, default=2)
    a = ap.parse_args()
    mp.spawn(run, args=(a.world_size, a.port), nprocs=a.world_size)
