"""Speech recognizer (conv + BiLSTM + CTC) trained with DDP on two nodes (torchrun, c10d rendezvous).
The CTC loss comes from the team's `fastctc` package when the model config asks for it (blank-collapsing kernel);
it lives in the site directory that each node's environment puts on PYTHONPATH."""
import datetime
import importlib
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CONFIG = {"n_mels": 40, "hidden": 96, "vocab": 32, "loss": "fastctc.ctc_loss"}


class Recognizer(nn.Module):
    def __init__(self, n_mels, hidden, vocab):
        super().__init__()
        self.conv = nn.Conv1d(n_mels, hidden, 5, stride=2, padding=2)
        self.rnn = nn.LSTM(hidden, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, vocab)

    def forward(self, x):
        h = torch.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        h, _ = self.rnn(h)
        return self.out(h).log_softmax(-1)


def build_loss(name):
    module, fn = name.rsplit(".", 1)
    return getattr(importlib.import_module(module), fn)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    print(f"rank {rank}/{world} (node {os.environ['GROUP_RANK']}) joined the process group", flush=True)
    torch.manual_seed(0)
    model = Recognizer(CONFIG["n_mels"], CONFIG["hidden"], CONFIG["vocab"])
    ctc_loss = build_loss(CONFIG["loss"])
    model = DDP(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 101):
        x = torch.randn(16, 120, CONFIG["n_mels"], generator=g)
        tgt = torch.randint(1, CONFIG["vocab"], (16, 20), generator=g)
        logp = model(x)
        loss = ctc_loss(logp, tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"rank {rank} step {step} ctc {loss.item():.3f} ({time.time() - t0:.1f}s)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
