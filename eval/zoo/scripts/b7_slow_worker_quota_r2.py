"""Audio tagging with on-the-fly spectrogram features computed in DataLoader workers."""
import datetime
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Clips(Dataset):
    def __init__(self, rank, n=6000):
        self.rank, self.n = rank, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.rank * 100000 + i)
        wav = rng.standard_normal(8000).astype(np.float32)
        frames = np.lib.stride_tricks.sliding_window_view(wav, 256)[::64] * np.hanning(256)
        spec = np.log1p(np.abs(np.fft.rfft(frames, axis=1))).astype(np.float32)
        return torch.from_numpy(spec), int(rng.integers(8))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    dl = DataLoader(Clips(rank), batch_size=16, num_workers=1, prefetch_factor=4, persistent_workers=True)
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(122 * 129, 128), nn.ReLU(), nn.Linear(128, 8)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data_ms = compute_ms = 0.0
    t = time.time()
    for step, (x, y) in enumerate(dl, 1):
        t1 = time.time()
        data_ms += (t1 - t) * 1000
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t = time.time()
        compute_ms += (t - t1) * 1000
        if step % 20 == 0:
            print(f"[rank{rank}] step {step}/{len(dl)} loss {loss.item():.3f} data_ms {data_ms / 20:.1f} "
                  f"compute_ms {compute_ms / 20:.1f}", flush=True)
            data_ms = compute_ms = 0.0
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
