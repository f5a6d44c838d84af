"""Small GRU sequence tagger; rank 0 writes a crash-safe checkpoint (tmp file, fsync, rename) every 50 steps to the
checkpoint volume mounted at ./ckpt."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
log = logging.getLogger("tagger")


def safe_save(obj, path):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6000, 96)
        self.rnn = nn.GRU(96, 160, batch_first=True, bidirectional=True)
        self.out = nn.Linear(320, 17)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    torch.set_num_threads(1)
    model = DDP(Tagger())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    if rank == 0:
        log.info("params %.2fM, checkpoints every 50 steps to ckpt/", sum(p.numel() for p in model.parameters()) / 1e6)
    g = torch.Generator().manual_seed(rank)
    t = time.time()
    for step in range(1, 601):
        x = torch.randint(0, 6000, (16, 24), generator=g)
        y = x % 17
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 17), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 and rank == 0:
            safe_save({"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step},
                      f"ckpt/last.pt")
            log.info("saved ckpt/last.pt (step %d)", step)
        if step % 10 == 0 and rank == 0:
            log.info("step %d/600 loss %.4f (%.1f ms/step)", step, loss.item(), (time.time() - t) * 100)
            t = time.time()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
