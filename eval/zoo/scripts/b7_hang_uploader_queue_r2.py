"""Contrastive image-text toy model; rank 2 is the metrics rank and streams per-step records to the tracking server."""
import datetime
import json
import queue
import threading
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

METRICS_RANK = 2


class Uploader(threading.Thread):
    """Batches metric records and 'uploads' them (appends to the spool file the tracking agent ships)."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.q = queue.Queue(maxsize=64)
        self.path = path

    def run(self):
        buf = []
        while True:
            buf.append(self.q.get())
            if len(buf) >= 16:
                with open(self.path, "a") as f:
                    f.write(json.dumps(buf) + "\n")
                buf = []


class Dual(nn.Module):
    def __init__(self):
        super().__init__()
        self.img = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 64))
        self.txt = nn.Sequential(nn.EmbeddingBag(3000, 64), nn.Linear(64, 64))
        self.scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, im, tx):
        a = nn.functional.normalize(self.img(im), dim=-1)
        b = nn.functional.normalize(self.txt(tx), dim=-1)
        return self.scale.exp() * a @ b.T


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    model = DDP(Dual())
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    up = None
    if rank == METRICS_RANK:
        up = Uploader("metrics_spool.jsonl")
        up.start()
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 1201):
        im = torch.randn(32, 256, generator=g)
        tx = torch.randint(0, 3000, (32, 12), generator=g)
        logits = model(im, tx)
        loss = (nn.functional.cross_entropy(logits, torch.arange(32)) +
                nn.functional.cross_entropy(logits.T, torch.arange(32))) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        if up is not None:
            rec = {"step": step, "loss": loss.item(), "t": time.time()}
            if step >= 100:  # added with the temperature schedule: log the learned scale too
                rec["logit_scale"] = np.float32(model.module.scale.exp().item())
            up.q.put(rec)
        if step % 20 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f} {(time.time() - t0) / 20 * 1000:.1f} ms/step")
            t0 = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
