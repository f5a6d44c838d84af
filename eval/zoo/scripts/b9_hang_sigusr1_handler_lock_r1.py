"""Speech-command classifier; the cluster sends SIGUSR1 before the time limit, and the handler saves a snapshot."""
import datetime
import logging
import os
import signal
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("kws")


class Trainer:
    def __init__(self, rank):
        self.rank = rank
        self.model = DDP(nn.Sequential(nn.Conv1d(40, 128, 5, padding=2), nn.ReLU(), nn.Conv1d(128, 128, 5, padding=2),
                                       nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(128, 12)))
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.state_lock = threading.Lock()  # model/optimizer state must not be read mid-update
        self.step = 0
        signal.signal(signal.SIGUSR1, self.on_usr1)

    def on_usr1(self, signum, frame):
        log.info("rank %d: got SIGUSR1, saving a snapshot before the time limit", self.rank)
        with self.state_lock:
            torch.save({"model": self.model.module.state_dict(), "step": self.step}, f"snapshot_rank{self.rank}.pt")
        log.info("rank %d: snapshot saved", self.rank)

    def train_step(self, x, y):
        with self.state_lock:
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.step += 1
        return loss.item()


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    tr = Trainer(rank)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, 801):
        x = torch.randn(32, 40, 98, generator=g)
        y = torch.randint(0, 12, (32,), generator=g)
        loss = tr.train_step(x, y)
        if step % 20 == 0:
            log.info("rank %d step %d/800 loss %.4f %.1f ms/step", rank, step, loss, (time.time() - t) * 50)
            t = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
