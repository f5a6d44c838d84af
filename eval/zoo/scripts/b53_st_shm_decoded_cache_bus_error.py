"""Keyword-spotting model on 2 ranks (DDP, gloo). To decode every clip only once, each rank keeps a decoded-feature
cache in POSIX shared memory (multiprocessing.shared_memory) that its 2 DataLoader workers fill on first touch and
read on later epochs."""
import datetime
import time
from multiprocessing import shared_memory

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

FRAMES, BINS = 98, 80


class CachedClips(Dataset):
    def __init__(self, path, shm_name):
        self.raw = np.load(path, mmap_mode="r")
        self.labels = np.load(path.replace("/clips-", "/labels-"))
        self.shm = shared_memory.SharedMemory(name=shm_name)
        self.cache = np.ndarray((len(self.raw), FRAMES, BINS), dtype=np.float32, buffer=self.shm.buf)
        self.filled = np.ndarray((len(self.raw),), dtype=np.uint8, buffer=self.shm.buf,
                                 offset=self.cache.nbytes)

    def __len__(self):
        return len(self.raw)

    def __getitem__(self, i):
        if not self.filled[i]:
            wav = np.asarray(self.raw[i], dtype=np.float32)
            spec = np.abs(np.fft.rfft(wav.reshape(FRAMES, -1), n=2 * BINS - 2, axis=1))
            self.cache[i] = np.log1p(spec)
            self.filled[i] = 1
        return torch.from_numpy(self.cache[i].copy()), int(self.labels[i])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    n = len(np.load(f"clips/clips-{rank}.npy", mmap_mode="r"))
    size = n * FRAMES * BINS * 4 + n
    shm = shared_memory.SharedMemory(name=f"kws_cache_r{rank}", create=True, size=size)
    print(f"rank {rank}: decoded-feature cache {size / 2**20:.0f} MiB in /dev/shm/kws_cache_r{rank} for {n} clips",
          flush=True)
    ds = CachedClips(f"clips/clips-{rank}.npy", shm.name)
    loader = DataLoader(ds, batch_size=64, num_workers=2, shuffle=True, persistent_workers=True)
    model = nn.Sequential(nn.Flatten(), nn.Linear(FRAMES * BINS, 128), nn.ReLU(), nn.Linear(128, 12))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    t0 = time.time()
    try:
        for epoch in range(3):
            for step, (x, y) in enumerate(loader):
                loss = F.cross_entropy(ddp(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 10 == 0:
                    print(f"rank {rank} | epoch {epoch} | step {step}/{len(loader)} | loss {loss.item():.3f} | "
                          f"{time.time() - t0:.1f}s", flush=True)
    finally:
        shm.close()
        shm.unlink()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
