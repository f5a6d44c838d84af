"""Land-cover segmentation head (per-pixel MLP over patch features) on DDP, 3 ranks. Each rank keeps per-class
pixel counts for the class-balanced loss weights; on any error the trainer tries to write an emergency checkpoint
that all ranks agree on before exiting."""
import datetime
import os
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

CLASSES = ["background", "water", "forest", "cropland", "urban", "bare"]


class Trainer:
    def __init__(self):
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
        self.rank = dist.get_rank()
        torch.set_num_threads(1)
        torch.manual_seed(0)
        self.model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, len(CLASSES))))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.g = torch.Generator().manual_seed(self.rank)
        # counts for the foreground classes; background pixels are masked out upstream
        self.counts = {c: 0 for c in CLASSES[1:]}
        self.step = 0

    def batch(self):
        x = torch.randn(512, 64, generator=self.g)
        y = torch.randint(1, len(CLASSES), (512,), generator=self.g)
        if self.rank == 2 and self.step >= 37:  # tiles at the coast edge of rank 2's region: unmasked no-data pixels
            y[:24] = 0
        return x, y

    def update_counts(self, y):
        for c in y.tolist():
            self.counts[CLASSES[c]] += 1

    def train_step(self):
        x, y = self.batch()
        self.update_counts(y)
        total = sum(self.counts.values())
        w = torch.tensor([1.0] + [total / (len(self.counts) * max(self.counts[c], 1)) for c in CLASSES[1:]])
        loss = F.cross_entropy(self.model(x), y, weight=w)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.step += 1
        if self.step % 10 == 0:
            print(f"[rank{self.rank}] step {self.step} loss {loss.item():.4f}", flush=True)

    def emergency_checkpoint(self):
        flag = torch.tensor([self.step])
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)  # agree on the step every rank reached
        if self.rank == 0:
            os.makedirs("ckpt", exist_ok=True)
            torch.save(self.model.module.state_dict(), f"ckpt/emergency-step{int(flag)}.pt")

    def fit(self, steps=200):
        try:
            while self.step < steps:
                self.train_step()
        except Exception:
            if self.rank != 0:
                raise
            print(f"[rank{self.rank}] training failed at step {self.step}, writing emergency checkpoint", flush=True)
            traceback.print_exc()
            self.emergency_checkpoint()
            raise


if __name__ == "__main__":
    Trainer().fit()
