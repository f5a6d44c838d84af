"""Image classifier (small CNN on 32x32 synthetic images) on DDP, 3 ranks. A background reporter thread
gathers every rank's throughput every 2 seconds (dist.all_gather) so that rank 0 can print the slowest rank while
training runs in the main thread. Flight Recorder is on (TORCH_FR_BUFFER_SIZE); on a collective error the main
thread writes the rank's trace to fr/."""
import datetime
import os
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(rank)
samples = 0
t_start = time.time()
stop = threading.Event()


def reporter():
    while not stop.wait(2.0):
        rate = torch.tensor([samples / (time.time() - t_start), float(rank)])
        out = [torch.zeros(2) for _ in range(world)]
        dist.all_gather(out, rate)
        if rank == 0:
            slowest = min(out, key=lambda t: t[0])
            print(f"[reporter] samples/s per rank {[round(float(t[0]), 1) for t in out]}, "
                  f"slowest rank {int(slowest[1])}", flush=True)


threading.Thread(target=reporter, daemon=True, name="throughput-reporter").start()
print(f"[rank{rank}] training started (reporter thread every 2.0 s)", flush=True)


def fr_dump():
    os.makedirs("fr", exist_ok=True)
    with open(f"fr/trace_rank_{rank}", "wb") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace())
    print(f"[rank{rank}] flight recorder dump: fr/trace_rank_{rank}", flush=True)


try:
    for step in range(1, 1001):
        x = torch.randn(32, 3, 32, 32, generator=g)
        y = torch.randint(0, 10, (32,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        samples += len(x)
        if step % 20 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
except Exception:
    fr_dump()
    raise
finally:
    stop.set()
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
