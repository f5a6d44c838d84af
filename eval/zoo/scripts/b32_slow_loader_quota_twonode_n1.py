"""Keyword-spotting CNN on raw audio windows (the DataLoader workers compute a framed log-power spectrum per clip),
DDP over gloo, one rank per node on two nodes. Each node logs an iteration line every 50 iterations."""
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

ITERS = 800


class Clips(Dataset):
    def __init__(self, rank, n=200000):
        self.rank, self.n = rank, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.rank * 1_000_003 + i)
        wav = rng.standard_normal(8000).astype(np.float32)
        frames = np.lib.stride_tricks.sliding_window_view(wav, 256)[::128] * np.hanning(256)
        spec = np.log(np.abs(np.fft.rfft(frames, axis=1)) ** 2 + 1e-6)[:, :64]
        return torch.from_numpy(spec.astype(np.float32)).T, int(rng.integers(0, 12))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    node = int(os.environ.get("GROUP_RANK", rank))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(
        nn.Conv1d(64, 96, 5, padding=2), nn.ReLU(), nn.Conv1d(96, 96, 5, padding=2), nn.ReLU(),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(96, 12)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = DataLoader(Clips(rank), batch_size=32, shuffle=True, num_workers=2, persistent_workers=True,
                        generator=torch.Generator().manual_seed(rank))
    it = iter(loader)
    t_win = time.time()
    data_s = 0.0
    for step in range(1, ITERS + 1):
        t0 = time.time()
        x, y = next(it)
        data_s += time.time() - t0
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            dt = (time.time() - t_win) / 50 * 1000
            print(f"[node{node}] it {step}/{ITERS} loss {loss.item():.4f} {dt:.1f} ms/it data {data_s / 50 * 1000:.1f} ms",
                  flush=True)
            t_win, data_s = time.time(), 0.0
    print(f"[node{node}] training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
