"""Keyword spotter (12 commands) on 1-second clips, DDP on gloo under torchrun. Each rank reads the clips of its own
manifest (data/manifest-rank<R>.csv) through a map-style Dataset with the DataLoader in the main process
(num_workers=0: the cluster's containers had too little shared memory for workers); a clip recorded at another
sample rate is resampled to 16 kHz in the Dataset (windowed-sinc low-pass + decimation). tqdm bar per rank."""
import csv
import datetime
import os
import wave

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

SR = 16000


def lowpass_taps(cutoff, n=511):
    t = np.arange(n) - (n - 1) / 2
    h = np.sinc(2 * cutoff * t) * np.hamming(n)
    return h / h.sum()


def resample(x, sr):
    """Integer-ratio downsampling (48k/32k -> 16k): anti-alias filter, then keep every k-th sample."""
    k = sr // SR
    y = np.convolve(x, lowpass_taps(0.5 / k), mode="same")
    return y[::k]


class Clips(Dataset):
    def __init__(self, manifest):
        with open(manifest) as f:
            self.rows = [(r["path"], int(r["label"])) for r in csv.DictReader(f)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        path, label = self.rows[i]
        with wave.open(path) as w:
            sr = w.getframerate()
            x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768
        if sr != SR:
            x = resample(x, sr)
        x = torch.from_numpy(np.ascontiguousarray(x[:SR], dtype=np.float32))  # clips are 1 s; a longer take: its start
        frames = x.unfold(0, 400, 160) * torch.hann_window(400)
        spec = torch.fft.rfft(frames).abs().pow(2)[:, :128].clamp_min(1e-8).log()
        return spec.T.unsqueeze(0), label


class KWS(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((4, 4)))
        self.fc = nn.Linear(32 * 16, 12)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ds = Clips(f"data/manifest-rank{rank}.csv")
    loader = DataLoader(ds, batch_size=8, shuffle=False, num_workers=0, drop_last=True)
    model = DDP(KWS())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    for xb, yb in tqdm(loader, desc=f"[rank {rank}] train", position=rank, mininterval=1.0):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        torch.save(model.module.state_dict(), "kws.pt")
        print("saved kws.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
