"""Keyword spotter on log-mel frames (1-D conv net), DDP over gloo, 2 ranks; the job wrapper retries torchrun once. The
dataset decodes each clip on first use and keeps the decoded frames in memory so later epochs skip decoding. Rank 0
writes ckpt/last.pt every 40 steps; a restarted job resumes from it."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("kws")
CKPT = "ckpt/last.pt"


class Clips(Dataset):
    def __init__(self, n):
        self.n = n
        self.decoded = {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i not in self.decoded:
            g = torch.Generator().manual_seed(i)
            self.decoded[i] = torch.randn(40, 800, generator=g)  # "decode" the clip once
        return self.decoded[i], i % 12


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(), nn.Conv1d(64, 64, 5, padding=2), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12))
    model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = 0
    if os.path.exists(CKPT):
        ck = torch.load(CKPT, map_location="cpu")
        model.module.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start = ck["step"]
        log.info("resumed from %s at step %d", CKPT, start)
    ds = Clips(20000)
    sampler = DistributedSampler(ds, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=32, sampler=sampler)
    log.info("rank %d: %d clips per rank, starting at step %d", rank, len(sampler), start)
    t0 = time.time()
    step = start
    for x, y in loader:
        step += 1
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("rank %d step %d loss %.4f %.0f ms/step", rank, step, loss.item(),
                     (time.time() - t0) / (step - start) * 1000)
        if rank == 0 and step % 40 == 0:
            os.makedirs("ckpt", exist_ok=True)
            torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, CKPT)
            log.info("saved %s (step %d)", CKPT, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
