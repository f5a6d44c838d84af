"""Fine-tunes the team's pretrained audio encoder (exported by the pretraining cluster to pretrained/) on keyword
spotting; torch.multiprocessing.spawn with a tcp:// rendezvous, python logging with asctime and processName."""
import logging
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger("kws-ft")


class Encoder(nn.Module):
    def __init__(self, d=128):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(40, d, 5, stride=2, padding=2), nn.GELU(), nn.Conv1d(d, d, 5, stride=2,
                                  padding=2), nn.GELU())
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(self.conv(x).mean(-1))


def worker(rank, world, port):
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(processName)s %(levelname)s %(name)s - %(message)s")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    enc = Encoder()
    log.info("loading pretrained encoder from pretrained/audio-encoder-v7.pt")
    state = torch.load("pretrained/audio-encoder-v7.pt", map_location="cpu")
    enc.load_state_dict(state["encoder"])
    model = nn.parallel.DistributedDataParallel(nn.Sequential(enc, nn.Linear(128, 12)))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, 301):
        x, y = torch.randn(32, 40, 98, generator=g), torch.randint(0, 12, (32,), generator=g)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info("step %d loss %.4f", step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    port = int(sys.argv[1])
    mp.spawn(worker, args=(2, port), nprocs=2)
