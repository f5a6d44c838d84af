"""Sequence tagger (transformer encoder), DDP over gloo across nodes; model size from the command line."""
import argparse
import logging
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(format="%(asctime)s [%(levelname)s] %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("tagger")


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=16000)
    p.add_argument("--tags", type=int, default=17)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--lr", type=float, default=5e-4)
    return p.parse_args()


class Tagger(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.emb = nn.Embedding(a.vocab, a.d_model)
        layer = nn.TransformerEncoderLayer(a.d_model, a.heads, 4 * a.d_model, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False)
        self.out = nn.Linear(a.d_model, a.tags)

    def forward(self, x):
        return self.out(self.enc(self.emb(x)))


def main():
    a = parse()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("rank %d/%d on %s (local rank %s): %s", rank, world, socket.gethostname(), os.environ["LOCAL_RANK"],
             vars(a))
    torch.manual_seed(0)
    model = Tagger(a)
    log.info("rank %d: model has %.2fM parameters", rank, sum(p.numel() for p in model.parameters()) / 1e6)
    model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, a.steps + 1):
        x = torch.randint(0, a.vocab, (16, 48), generator=g)
        y = x % a.tags
        loss = F.cross_entropy(model(x).reshape(-1, a.tags), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
