"""Keyword-spotting fine-tune on the CPU pool: starts from the encoder pre-trained on the GPU cluster
(pretrained/kws_encoder_e40.pt) and trains a new 12-keyword head. Launched with torch.multiprocessing.spawn,
3 processes; one JSON object per log line."""
import json
import os
import sys
import time
from datetime import datetime, timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD = 3


def log(rank, msg, **kw):
    print(json.dumps({"ts": datetime.now().isoformat(timespec="milliseconds"), "rank": rank, "msg": msg, **kw}))


class Encoder(nn.Module):
    def __init__(self, n_mels=40, d=128):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_mels, d, 5, padding=2), nn.ReLU(), nn.Conv1d(d, d, 5, padding=2),
                                  nn.ReLU())

    def forward(self, x):
        return self.conv(x).mean(-1)


class KWS(nn.Module):
    def __init__(self, n_keywords=12):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(128, n_keywords)

    def forward(self, x):
        return self.head(self.encoder(x))


def worker(rank, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=timedelta(seconds=25))
    torch.set_num_threads(1)
    model = KWS()
    ckpt = torch.load("pretrained/kws_encoder_e40.pt")
    model.encoder.load_state_dict(ckpt["encoder"])
    log(rank, "loaded pretrained encoder", path="pretrained/kws_encoder_e40.pt", epoch=ckpt["epoch"])
    model = DDP(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, 301):
        x = torch.randn(32, 40, 98, generator=g)
        y = torch.randint(0, 12, (32,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log(rank, "train", step=step, loss=round(loss.item(), 4), ms_per_step=round((time.time() - t0) * 40, 1))
            t0 = time.time()
    if rank == 0:
        torch.save(model.module.state_dict(), "kws_finetuned.pt")
    log(rank, "done")
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 29500
    log(0, "launching", world_size=WORLD, master_port=port)
    mp.spawn(worker, args=(port,), nprocs=WORLD, join=True)
