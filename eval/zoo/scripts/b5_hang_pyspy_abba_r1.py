"""Tabular model, DDP over gloo via torch.multiprocessing.spawn; the last rank uploads checkpoints in a
background thread so that rank 0 is not slowed down."""
import datetime
import io
import os
import queue
import threading
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD = 2
SAVE_EVERY = 30


class Uploader:
    """Copies serialized checkpoints to the object store; keeps a small status table."""

    def __init__(self):
        self.upload_lock = threading.Lock()  # one upload at a time
        self.state_lock = threading.Lock()  # protects self.status
        self.status = {}
        self.q = queue.Queue()
        threading.Thread(target=self._run, daemon=True, name="ckpt-uploader").start()

    def _run(self):
        while True:
            step, blob = self.q.get()
            with self.upload_lock:
                time.sleep(2.0)  # network transfer
                with self.state_lock:
                    self.status[step] = f"uploaded {len(blob)} bytes"

    def submit(self, step, blob):
        with self.state_lock:
            self.status[step] = "queued"
            with self.upload_lock:  # wait for the previous upload so they do not interleave
                self.q.put((step, blob))


def worker(rank):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    up = Uploader() if rank == WORLD - 1 else None
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        x = torch.randn(64, 32, generator=g)
        loss = nn.functional.mse_loss(model(x), x[:, :4].sum(1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
        if up is not None and step % SAVE_EVERY == 0:
            buf = io.BytesIO()
            torch.save(model.module.state_dict(), buf)
            up.submit(step, buf.getvalue())
            print(f"[rank{rank}] checkpoint step {step} queued for upload", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ["MASTER_PORT"] = os.environ.get("ZOO_PORT", "29512")
    mp.spawn(worker, nprocs=WORLD)
