"""Sensor-fault classifier (MLP over 64 features per reading) on DDP, 3 ranks. Each rank streams its readings from
the platform's stream fetcher through a named pipe (stream/part-<rank>.bin, fixed-size binary records) and reads
them with the team's native record reader (native/librecio.so, loaded with ctypes: it reads whole batches straight
into a numpy buffer, much faster than Python's file reads)."""
import ctypes
import datetime
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

REC = np.dtype([("x", "<f4", 64), ("y", "<i4")])
BATCH = 32
STEPS = 300

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
lib = ctypes.CDLL(os.path.abspath("native/librecio.so"))
lib.recio_read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_long]
lib.recio_read.restype = ctypes.c_long

path = f"stream/part-{rank}.bin"
fd = os.open(path, os.O_RDONLY)
print(f"[rank{rank}] streaming {path}", flush=True)
buf = np.empty(BATCH, dtype=REC)


def next_batch():
    n = lib.recio_read(fd, buf.ctypes.data, buf.nbytes)
    if n != buf.nbytes:
        raise EOFError(f"{path}: stream ended ({n} of {buf.nbytes} bytes)")
    return torch.from_numpy(buf["x"].copy()), torch.from_numpy(buf["y"].astype(np.int64))


torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 6)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
t0 = time.time()
for step in range(1, STEPS + 1):
    x, y = next_batch()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"[rank{rank}] step {step}/{STEPS} loss {loss.item():.4f} {1000 * (time.time() - t0) / 20:.1f} ms/step",
              flush=True)
        t0 = time.time()
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
