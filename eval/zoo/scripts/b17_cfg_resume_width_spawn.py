"""Next-basket recommender, torch.multiprocessing.spawn (tcp:// init), resumes from the team's last checkpoint."""
import argparse
import logging
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Basket(nn.Module):
    def __init__(self, n_items=5000, hidden=768):
        super().__init__()
        self.items = nn.EmbeddingBag(n_items, hidden, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.LayerNorm(hidden))
        self.head = nn.Linear(hidden, n_items)

    def forward(self, x):
        return self.head(self.mlp(self.items(x)))


def run(rank, args):
    logging.basicConfig(format=f"%(asctime)s %(levelname)s rank{rank} %(message)s", level=logging.INFO)
    log = logging.getLogger("basket")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.nprocs, timeout=timedelta(seconds=20))
    model = Basket(hidden=args.hidden)
    log.info(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters")
    if args.resume:
        ckpt = torch.load(args.resume, map_location="cpu")
        log.info(f"loading {args.resume} (epoch {ckpt['epoch']})")
        model.load_state_dict(ckpt["model"])
    model = DDP(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, 201):
        x, y = torch.randint(0, 5000, (64, 12)), torch.randint(0, 5000, (64,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info(f"step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--port", type=int, default=29512)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--resume", default=None)
    mp.spawn(run, args=(ap.parse_args(),), nprocs=ap.parse_args().nprocs)
