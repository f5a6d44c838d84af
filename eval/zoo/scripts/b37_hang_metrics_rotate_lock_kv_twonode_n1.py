"""Click-through-rate model (embeddings + MLP over hashed categorical features), DDP over gloo, one process per
node. Each rank appends per-step metrics to its own metrics/rank<R>.jsonl (picked up by the dashboard's tailer),
rotated when it grows past 256 KiB. Console logs are key=value lines."""
import json
import os
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

NODE = os.environ.get("GROUP_RANK", "0")


def kv(**fields):
    line = " ".join(f"{k}={v}" for k, v in {"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "node": NODE,
                                           "rank": os.environ.get("RANK"), **fields}.items())
    print(line, file=sys.stdout, flush=True)


class MetricsWriter:
    def __init__(self, path, max_bytes=256 * 1024):
        self.path, self.max_bytes = path, max_bytes
        self._lock = threading.Lock()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.fh = open(path, "a")

    def write(self, **rec):
        with self._lock:
            self.fh.write(json.dumps(rec) + "\n")
            self.fh.flush()
            if self.fh.tell() > self.max_bytes:
                self._rotate()

    def _rotate(self):
        with self._lock:
            self.fh.close()
            os.replace(self.path, self.path + ".1")
            self.fh = open(self.path, "a")


class CTR(nn.Module):
    def __init__(self, buckets=200000, fields=16, d=16):
        super().__init__()
        self.emb = nn.EmbeddingBag(buckets, d, mode="sum")
        self.fields, self.d = fields, d
        self.mlp = nn.Sequential(nn.Linear(fields * d, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, idx):
        b = idx.shape[0]
        e = self.emb(idx.reshape(-1, 1)).reshape(b, self.fields * self.d)
        return self.mlp(e).squeeze(-1)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    metrics = MetricsWriter(f"metrics/rank{rank}.jsonl")
    kv(event="start", world_size=world, metrics_file=metrics.path, metrics_bytes=os.path.getsize(metrics.path))
    torch.manual_seed(0)
    model = DDP(CTR())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 801):
        idx = torch.randint(0, 200000, (256, 16), generator=g)
        y = (idx[:, 0] % 7 == 0).float()
        loss = F.binary_cross_entropy_with_logits(model(idx), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        metrics.write(step=step, loss=round(loss.item(), 5), lr=0.05, ts=round(time.time(), 3), node=NODE,
                      examples=256 * step * world)
        if step % 25 == 0:
            kv(event="train", step=f"{step}/800", loss=f"{loss.item():.4f}",
               ms_per_step=f"{(time.time() - t0) / 25 * 1000:.1f}")
            t0 = time.time()
    kv(event="done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
