"""Keyword spotting from 16 kHz wav clips; each rank reads its own list of clips."""
import datetime
import logging
import wave

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s")
log = logging.getLogger("kws")
SR = 16000


def load(path):
    with wave.open(path) as w:
        if w.getframerate() != SR:
            raise ValueError(f"{path}: sample rate {w.getframerate()} Hz, expected {SR} Hz")
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    return torch.from_numpy(pcm[:SR // 2].astype(np.float32) / 32768.0)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    clips = [line.split() for line in open(f"data/clips_{rank}.txt")]
    log.info("rank %d: %d clips", rank, len(clips))
    model = DDP(nn.Sequential(nn.Conv1d(1, 8, 160, stride=80), nn.ReLU(), nn.AdaptiveAvgPool1d(16), nn.Flatten(),
                              nn.Linear(128, 10)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(len(clips) // 8):
        batch = clips[step * 8:(step + 1) * 8]
        x = torch.stack([load(p) for p, _ in batch]).unsqueeze(1)
        y = torch.tensor([int(c) for _, c in batch])
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            log.info("rank %d step %d/%d loss %.4f", rank, step, len(clips) // 8, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
