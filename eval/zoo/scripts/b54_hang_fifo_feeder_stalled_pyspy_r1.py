"""Speaker-ID model on DDP, 3 ranks, each reading its examples from a named pipe (stream/rank<R>.fifo) that the
node's feature-streaming sidecar (stream/feeder.py) fills from the feature store: fixed-size records of 40 float32
features and one label. The job's SIGTERM handler writes the rank's Flight Recorder trace (TORCH_FR_BUFFER_SIZE is
set) before exiting, so that a job killed by the launcher or the scheduler leaves its collective history behind."""
import datetime
import os
import signal
import struct
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
REC = struct.Struct("<40fi")


def dump_fr(why):
    os.makedirs("fr", exist_ok=True)
    with open(f"fr/trace_rank_{rank}", "wb") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace())
    print(f"{time.strftime('%H:%M:%S')} rank {rank}: {why}: flight recorder trace written to fr/trace_rank_{rank}",
          flush=True)


def on_sigterm(signum, frame):
    dump_fr("SIGTERM")
    sys.exit(143)


signal.signal(signal.SIGTERM, on_sigterm)


class FifoStream:
    def __init__(self, path):
        self.f = open(path, "rb", buffering=0)

    def batch(self, n):
        buf = b""
        while len(buf) < n * REC.size:
            chunk = self.f.read(n * REC.size - len(buf))
            if not chunk:
                raise EOFError("feature stream closed")
            buf += chunk
        rows = [REC.unpack_from(buf, i * REC.size) for i in range(n)]
        return torch.tensor([r[:40] for r in rows]), torch.tensor([r[40] for r in rows])


stream = FifoStream(f"stream/rank{rank}.fifo")
print(f"{time.strftime('%H:%M:%S')} rank {rank}: reading features from stream/rank{rank}.fifo", flush=True)
model = DDP(nn.Sequential(nn.Linear(40, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 50)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
try:
    for step in range(1, 401):
        x, y = stream.batch(64)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"{time.strftime('%H:%M:%S')} rank {rank}: step {step}/400 loss {loss.item():.4f}", flush=True)
except Exception as e:
    dump_fr(type(e).__name__)
    raise
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()
