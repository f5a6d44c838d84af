"""Text classifier, DDP over gloo, 2 ranks under torchrun; a tqdm bar per rank and a small metrics tracker shared
with a background flush thread (a threading.Lock guards its buffer)."""
import os
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

STEPS = 600


class Tracker:
    def __init__(self, rank):
        self.rank = rank
        self.lock = threading.Lock()
        self.buf = []
        self.path = f"metrics/rank{rank}.tsv"
        os.makedirs("metrics", exist_ok=True)

    def log(self, step, loss, n_empty):
        with self.lock:
            if n_empty:  # keep a note of batches holding empty documents
                self.warn(step, f"{n_empty} empty documents")
            self.buf.append(f"{step}\t{loss:.5f}\n")

    def warn(self, step, msg):
        with self.lock:
            self.buf.append(f"{step}\tWARN {msg}\n")

    def flush(self):
        with self.lock:
            buf, self.buf = self.buf, []
        with open(self.path, "a") as f:
            f.writelines(buf)


class Clf(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(5000, 64)
        self.out = nn.Linear(64, 20)

    def forward(self, x, offsets):
        return self.out(self.emb(x, offsets))


def main():
    dist.init_process_group("gloo", timeout=__import__("datetime").timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Clf())
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    tr = Tracker(rank)
    g = torch.Generator().manual_seed(rank)
    docs = [line.split("\t") for line in open(f"data/docs-{rank}.tsv")]
    for step in tqdm(range(1, STEPS + 1), desc=f"rank {rank}", mininterval=0.5):
        rows = docs[(step - 1) * 32:step * 32]
        toks = [[int(t) for t in r[1].split()] for r in rows]
        offsets = torch.tensor([0] + [len(t) for t in toks[:-1]]).cumsum(0)
        x = torch.tensor([t for d in toks for t in d])
        y = torch.tensor([int(r[0]) for r in rows])
        loss = nn.functional.cross_entropy(model(x, offsets), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tr.log(step, loss.item(), sum(1 for t in toks if not t))
        if step % 100 == 0:
            tr.flush()
    dist.barrier()
    if rank == 0:
        print("finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
