"""Line-level OCR recogniser (conv + BiGRU + CTC) trained with DDP on two nodes; the text augmentations come from the
team's vendored package `textaug` (vendor/ in the repository, put on PYTHONPATH by the job's environment)."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from textaug import random_stroke_noise


class CRNN(nn.Module):
    def __init__(self, classes=80):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d((2, 1)))
        self.rnn = nn.GRU(32 * 16, 64, bidirectional=True, batch_first=True)
        self.out = nn.Linear(128, classes)

    def forward(self, x):
        f = self.conv(x)
        b, c, h, w = f.shape
        f, _ = self.rnn(f.permute(0, 3, 1, 2).reshape(b, w, c * h))
        return self.out(f)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank = dist.get_rank()
    torch.set_num_threads(1)
    model = DDP(CRNN())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 101):
        x = random_stroke_noise(torch.rand(8, 1, 32, 100, generator=g), g)
        tgt = torch.randint(1, 80, (8, 12), generator=g)
        logp = model(x).log_softmax(-1).transpose(0, 1)
        loss = F.ctc_loss(logp, tgt, torch.full((8,), 100), torch.full((8,), 12))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[rank {rank}] step {step} ctc {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
