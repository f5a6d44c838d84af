"""Product-category classifier over catalogue embeddings, DDP, 3 ranks. A background uploader thread ships each
rank's metrics to the experiment tracker (here: a file the tracker agent tails) every few seconds."""
import json
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

N_CLS = 8


class MetricsUploader:
    def __init__(self, rank):
        self.rank, self.buf, self.stop = rank, [], threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"uploader-{rank}")
        self.thread.start()

    def log(self, **kv):
        self.buf.append(kv)

    def _loop(self):
        while not self.stop.is_set():
            if self.buf:
                with open(f"tracker_rank{self.rank}.jsonl", "a") as f:
                    for rec in self.buf:
                        f.write(json.dumps(rec) + "\n")
                self.buf = []
            self.stop.wait(2.0)

    def close(self):
        self.stop.set()
        self.thread.join()


def shard(rank, n):
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(n, 64, generator=g)
    y = (x[:, :N_CLS].argmax(1))
    if rank == 2:  # this rank's catalogue slice (the "garden" vertical) has no items of category 7
        keep = y != 7
        x, y = x[keep], y[keep]
    return x, y


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    up = MetricsUploader(rank)
    x, y = shard(rank, 9600)
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, N_CLS)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    n_batches = 250  # batches per epoch (every rank has at least 8000 rows)
    for epoch in range(3):
        t0 = time.time()
        for b in range(n_batches):
            xb, yb = x[b * 32:(b + 1) * 32], y[b * 32:(b + 1) * 32]
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if b % 10 == 0:
                up.log(rank=rank, epoch=epoch, batch=b, loss=loss.item())
            if b % 100 == 0:
                print(f"[rank {rank}] epoch {epoch} batch {b}/{n_batches} loss {loss.item():.4f}", flush=True)
        with torch.no_grad():
            pred = model(x[:2000]).argmax(1)
        correct = torch.bincount(y[:2000][pred == y[:2000]], minlength=N_CLS).tolist()
        counts = torch.bincount(y[:2000], minlength=N_CLS).tolist()
        per_class = [correct[c] / counts[c] for c in range(N_CLS)]
        print(f"[rank {rank}] epoch {epoch} loss {loss.item():.4f} "
              f"mean per-class acc {sum(per_class) / N_CLS:.3f} ({time.time() - t0:.1f}s)", flush=True)
        up.log(rank=rank, epoch=epoch, per_class_acc=per_class)
        stats = torch.tensor([loss.item(), sum(per_class) / N_CLS])
        dist.all_reduce(stats)
        if rank == 0:
            print(f"epoch {epoch}: mean loss {stats[0] / 3:.4f} mean per-class acc {stats[1] / 3:.3f}", flush=True)
    up.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
