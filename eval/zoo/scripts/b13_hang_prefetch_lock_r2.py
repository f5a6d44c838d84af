"""Click-through model with a hand-written background prefetcher (the DataLoader's worker startup was too slow for
the tiny batches). DDP over gloo, 3 ranks, each on its own day of logs."""
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

BS = 64
DEPTH = 4


def collate(rows):
    x = torch.stack([r[0] for r in rows]).view(BS, -1)
    y = torch.stack([r[1] for r in rows])
    return x, y


class Prefetcher:
    def __init__(self, x, y, epochs):
        self.x, self.y, self.epochs = x, y, epochs
        self.lock = threading.Lock()
        self.ready = []
        self.done = False
        threading.Thread(target=self._run, name="prefetch", daemon=True).start()

    def _run(self):
        for _ in range(self.epochs):
            perm = torch.randperm(len(self.x))
            for i in range(0, len(perm), BS):
                while len(self.ready) >= DEPTH:
                    time.sleep(0.001)
                rows = [(self.x[j], self.y[j]) for j in perm[i:i + BS]]
                self.lock.acquire()
                self.ready.append(collate(rows))
                self.lock.release()
        self.done = True

    def __iter__(self):
        while True:
            with self.lock:
                if self.ready:
                    item = self.ready.pop(0)
                elif self.done:
                    return
                else:
                    item = None
            if item is None:
                time.sleep(0.001)
            else:
                yield item


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    day = torch.load(f"clicks/day-{rank}.pt")
    print(f"rank={rank} rows={len(day['x'])}", flush=True)
    model = DDP(nn.Sequential(nn.Linear(day["x"].size(1) * day["x"].size(2), 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
    t0 = time.time()
    for step, (x, y) in enumerate(Prefetcher(day["x"], day["y"], epochs=3), 1):
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"rank={rank} step={step} loss={loss.item():.4f} step_ms={(time.time() - t0) * 40:.1f}", flush=True)
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
