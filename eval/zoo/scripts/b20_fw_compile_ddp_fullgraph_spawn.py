"""Keyword-spotting model (conv front end + attention pooling over frames, padded clips masked by length), DDP over
gloo with torch.multiprocessing.spawn; --compile wraps the DDP model in torch.compile."""
import argparse
import datetime
import logging
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--port", type=int, default=29500)
p.add_argument("--steps", type=int, default=400)
p.add_argument("--compile", action="store_true")
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--compile-mode", default="default")
args = p.parse_args()
N_KW = 35


class KWS(nn.Module):
    def __init__(self, d=96):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(40, d, 3, padding=1), nn.ReLU(), nn.Conv1d(d, d, 3, padding=1), nn.ReLU())
        self.score = nn.Linear(d, 1)
        self.out = nn.Linear(d, N_KW)

    def forward(self, feats, lengths):
        h = self.front(feats.transpose(1, 2)).transpose(1, 2)
        w = self.score(h).squeeze(-1)
        pad = torch.arange(h.size(1))[None, :] >= lengths[:, None]
        if pad.any():  # padded batch: keep the padding frames out of the pooling
            w = w.masked_fill(pad, float("-inf"))
        return self.out((w.softmax(-1).unsqueeze(-1) * h).sum(1))


def run(rank, world):
    logging.basicConfig(format=f"%(asctime)s [rank {rank}] %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("kws")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    model = DDP(KWS())
    if args.compile:
        model = torch.compile(model, fullgraph=args.fullgraph, mode=args.compile_mode)
        log.info("torch.compile enabled (fullgraph=%s, mode=%s)", args.fullgraph, args.compile_mode)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        feats = torch.randn(32, 98, 40, generator=g)
        lengths = torch.randint(60, 99, (32,), generator=g)
        y = torch.randint(0, N_KW, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(feats, lengths), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d/%d loss %.4f %.1f ms/step", step, args.steps, loss.item(),
                     (time.time() - t0) / step * 1000)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(args.nprocs,), nprocs=args.nprocs)
