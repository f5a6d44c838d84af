"""Sequence tagger (BiLSTM-CRF-less: BiLSTM + linear), DDP over gloo, 2 processes. Resumes from checkpoints/last.pt
when it exists (the scheduler requeues the job after a preemption)."""
import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("tagger")
CKPT = "checkpoints/last.pt"


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(12000, 128)
        self.lstm = nn.LSTM(128, 128, batch_first=True, bidirectional=True)
        self.out = nn.Linear(256, 17)

    def forward(self, x):
        return self.out(self.lstm(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = 0
    if os.path.exists(CKPT):
        log.info("resuming from %s", CKPT)
        state = torch.load(CKPT, map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        log.info("resumed at step %d", start)
    model = nn.parallel.DistributedDataParallel(model)
    g = torch.Generator().manual_seed(rank + start)
    for step in range(start + 1, start + 301):
        x = torch.randint(0, 12000, (32, 40), generator=g)
        y = torch.randint(0, 17, (32, 40), generator=g)
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 17), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.4f", step, loss.item())
        if step % 100 == 0 and rank == 0:
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, CKPT)
            log.info("saved %s at step %d", CKPT, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
