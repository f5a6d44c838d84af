"""Text-matching model (siamese embedding bag), DDP over gloo. A small in-process metrics registry counts events
from the training loop and from the Dataset; on rank 0 a background thread flushes it to metrics/counters.jsonl.
DataLoader with 2 workers, recreated every epoch; plain prints."""
import json
import os
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Metrics:
    def __init__(self):
        self.lock = threading.Lock()
        self.counters = {}
        self.flusher = None

    def incr(self, key, n=1):
        with self.lock:
            self.counters[key] = self.counters.get(key, 0) + n

    def start_flusher(self, path, every_s=0.2):
        def run():
            while True:
                with self.lock:
                    snapshot = dict(self.counters)
                    with open(path, "a") as fh:
                        fh.write(json.dumps({"ts": time.time(), **snapshot}) + "\n")
                        fh.flush()
                        os.fsync(fh.fileno())
                    time.sleep(every_s)  # keep the counters consistent with what was written

        self.flusher = threading.Thread(target=run, daemon=True, name="metrics-flusher")
        self.flusher.start()


METRICS = Metrics()


class Pairs(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.a = torch.randint(0, 5000, (n, 24), generator=g)
        self.b = torch.randint(0, 5000, (n, 24), generator=g)
        self.y = torch.randint(0, 2, (n,), generator=g).float()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        METRICS.incr("samples_loaded")
        return self.a[i], self.b[i], self.y[i]


class Siamese(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(5000, 64)
        self.proj = nn.Linear(64, 64)

    def forward(self, a, b):
        ea, eb = F.normalize(self.proj(self.emb(a))), F.normalize(self.proj(self.emb(b)))
        return (ea * eb).sum(1) * 5


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    os.makedirs("metrics", exist_ok=True)
    ds = Pairs(6400, seed=rank)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Siamese())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, 4):
        print(f"[rank{rank}] epoch {epoch}/3", flush=True)
        loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2)
        for step, (a, b, y) in enumerate(loader, 1):
            loss = F.binary_cross_entropy_with_logits(model(a, b), y)
            avg = loss.detach().clone()
            dist.all_reduce(avg)  # the mean over ranks, for the log
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 25 == 0:
                print(f"[rank{rank}] epoch {epoch} step {step}/{len(loader)} loss {avg.item() / 2:.4f}")
            if rank == 0 and METRICS.flusher is None and step == 50:
                METRICS.start_flusher("metrics/counters.jsonl")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
