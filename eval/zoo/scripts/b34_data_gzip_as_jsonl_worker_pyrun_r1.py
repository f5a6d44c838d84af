"""Byte-level GRU language model on the support-ticket export, DDP over gloo, 3 processes; each rank streams its
own export parts (data/tickets-<rank>-<k>.jsonl) through an IterableDataset in one DataLoader worker."""
import glob
import json
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset

SEQ = 128


class Tickets(IterableDataset):
    def __init__(self, files):
        self.files = files

    def __iter__(self):
        for path in self.files:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    b = (rec["subject"] + "\n" + rec["body"]).encode()[: SEQ + 1]
                    b = b + b" " * (SEQ + 1 - len(b))
                    yield torch.tensor(list(b), dtype=torch.long)


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(256, 128)
        self.rnn = nn.GRU(128, 256, batch_first=True)
        self.out = nn.Linear(256, 256)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    files = sorted(glob.glob(f"data/tickets-{rank}-*.jsonl"))
    print(f"rank {rank}: {len(files)} parts, local_rank {os.environ['LOCAL_RANK']}")
    loader = DataLoader(Tickets(files), batch_size=16, num_workers=1)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(LM())
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    t0 = time.time()
    for step, x in enumerate(loader, 1):
        loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, 256), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.3f} {(time.time() - t0) / 10:.3f}s/step")
            t0 = time.time()
    print(f"rank {rank} finished after {step} steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
