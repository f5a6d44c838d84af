"""Audio-tagging model on precomputed log-mel patches read straight from the shared dataset volume (one shard file per
rank, fixed-size float16 records read with os.pread, no page-cache warm-up); DDP over gloo; a tqdm bar on rank 0 and a
timing line per rank every 25 steps."""
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

REC = 64 * 64  # float16 values per record (one 64x64 patch)
BATCH = 16


class ShardReader:
    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY)
        self.n = os.fstat(self.fd).st_size // (REC * 2)

    def batch(self, step):
        out = np.empty((BATCH, REC), dtype=np.float16)
        for j in range(BATCH):
            k = (step * BATCH + j) % self.n
            out[j] = np.frombuffer(os.pread(self.fd, REC * 2, k * REC * 2), dtype=np.float16)
        x = torch.from_numpy(out.astype(np.float32)).view(BATCH, 1, 64, 64)
        return x, (x.mean(dim=(1, 2, 3)) > 0).long()


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    reader = ShardReader(f"shared/mels/shard-{rank:02d}.f16")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    steps = 500
    data_t = comp_t = 0.0
    for step in tqdm(range(1, steps + 1), disable=rank != 0, desc="train", mininterval=1.0):
        t0 = time.perf_counter()
        x, y = reader.batch(step)
        t1 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t2 = time.perf_counter()
        data_t += t1 - t0
        comp_t += t2 - t1
        if step % 25 == 0:
            tqdm.write(f"rank {rank} step {step}/{steps} loss {loss.item():.4f} data {1000 * data_t / 25:.1f} ms "
                       f"compute {1000 * comp_t / 25:.1f} ms step {1000 * (data_t + comp_t) / 25:.1f} ms")
            data_t = comp_t = 0.0
    dist.barrier()
    if rank == 0:
        print(f"finished {steps} steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
