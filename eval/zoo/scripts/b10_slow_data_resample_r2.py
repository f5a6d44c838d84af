"""Keyword spotting on log-mel features computed on the fly; every rank reads its own clip manifest. Clips that are
not at 16 kHz are resampled in the loader (band-limited sinc interpolation in numpy, slow but dependency-free).
Keras-style progress bar on rank 0."""
import datetime
import json
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

SR = 16000


def resample(x, sr_in, sr_out=SR, taps=4):
    n_out = int(len(x) * sr_out / sr_in)
    t = np.arange(n_out) * sr_in / sr_out
    base = np.floor(t).astype(np.int64)
    out = np.zeros(n_out, dtype=np.float32)
    for k in range(-taps + 1, taps + 1):
        idx = np.clip(base + k, 0, len(x) - 1)
        out += x[idx] * np.sinc(t - (base + k)) * np.hanning(2 * taps)[k + taps - 1]
    return out


class Clips(Dataset):
    def __init__(self, manifest):
        self.items = [json.loads(line) for line in open(manifest)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        it = self.items[i]
        rng = np.random.default_rng(it["seed"])
        wav = rng.standard_normal(int(it["sr"] * 1.0)).astype(np.float32)  # stands in for reading the clip
        if it["sr"] != SR:
            wav = resample(wav, it["sr"])
        frames = wav[: SR // 160 * 160].reshape(-1, 160)
        spec = np.log(np.abs(np.fft.rfft(frames, axis=1))[:, :40] + 1e-6)
        return torch.from_numpy(spec.astype(np.float32)), it["label"]


class Progbar:
    def __init__(self, target, width=30):
        self.target, self.width, self.start = target, width, time.time()

    def update(self, current, values):
        frac = current / self.target
        filled = int(self.width * frac)
        bar = "=" * max(filled - 1, 0) + (">" if current < self.target else "=") + "." * (self.width - filled)
        per_step = (time.time() - self.start) / current
        tail = (f"ETA: {int(per_step * (self.target - current))}s" if current < self.target
                else f"{int(time.time() - self.start)}s {per_step * 1000:.0f}ms/step")
        vals = " - ".join(f"{k}: {v:.4f}" for k, v in values)
        sys.stdout.write(f"\r{current:>{len(str(self.target))}}/{self.target} [{bar}] - {tail} - {vals}")
        if current == self.target:
            sys.stdout.write("\n")
        sys.stdout.flush()


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    torch.set_num_threads(1)
    ds = Clips(f"manifests/train_rank{rank}.jsonl")
    loader = DataLoader(ds, batch_size=16, shuffle=False)
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(100 * 40, 128), nn.ReLU(), nn.Linear(128, 12)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    epochs = 1
    for epoch in range(epochs):
        if rank == 0:
            print(f"Epoch {epoch + 1}/{epochs}")
        bar = Progbar(len(loader)) if rank == 0 else None
        for step, (x, y) in enumerate(loader, 1):
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if bar and (step % 5 == 0 or step == len(loader)):
                acc = (out.argmax(1) == y).float().mean().item()
                bar.update(step, [("loss", loss.item()), ("accuracy", acc)])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
