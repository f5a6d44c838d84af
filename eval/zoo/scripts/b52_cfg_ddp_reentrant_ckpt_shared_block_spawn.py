"""Weight-shared ('universal') transformer for next-event prediction on clickstreams: one block applied N times,
with activation checkpointing as the YAML config asks. Started with torch.multiprocessing.spawn, gloo."""
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint


class SharedBlockLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["model"]["dim"]
        self.depth = cfg["model"]["depth"]
        self.ckpt = cfg["gradient_checkpointing"]
        self.emb = nn.Embedding(cfg["model"]["vocab"], d)
        self.block = nn.TransformerEncoderLayer(d, cfg["model"]["heads"], 2 * d, batch_first=True, dropout=0.0)
        self.out = nn.Linear(d, cfg["model"]["vocab"])

    def forward(self, x):
        h = self.emb(x)
        for _ in range(self.depth):  # the same block (shared weights) at every depth
            if self.ckpt["enabled"]:
                h = checkpoint(self.block, h, use_reentrant=self.ckpt["use_reentrant"])
            else:
                h = self.block(h)
        return self.out(h)


def worker(rank, world, cfg):
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=25))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(SharedBlockLM(cfg))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["train"]["lr"])
    g = torch.Generator().manual_seed(rank)
    if rank == 0:
        print(f"model: shared block x{cfg['model']['depth']}, checkpointing {cfg['gradient_checkpointing']}", flush=True)
    for step in range(cfg["train"]["steps"]):
        x = torch.randint(0, cfg["model"]["vocab"], (cfg["train"]["batch_size"], 33), generator=g)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    cfg = yaml.safe_load(open(sys.argv[1]))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    world = cfg["train"]["world_size"]
    print(f"spawning {world} workers", flush=True)
    mp.spawn(worker, args=(world, cfg), nprocs=world)
