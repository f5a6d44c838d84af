"""Small translation model (GRU encoder-decoder) trained with DDP on two nodes; the hyper-parameters come from an
experiment file in the repository (--config configs/exp/...yaml), read by every rank after the process group is up."""
import argparse
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP


class Seq2Seq(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.GRU(d, d, batch_first=True)
        self.dec = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, src, tgt):
        _, h = self.enc(self.emb(src))
        o, _ = self.dec(self.emb(tgt), h)
        return self.out(o)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank = dist.get_rank()
    torch.set_num_threads(1)
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    print(f"[rank {rank}] config {args.config}: {cfg}", flush=True)
    model = DDP(Seq2Seq(cfg["vocab"], cfg["d_model"]))
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    g = torch.Generator().manual_seed(rank)
    for step in range(1, cfg["steps"] + 1):
        src = torch.randint(0, cfg["vocab"], (16, 20), generator=g)
        tgt = torch.randint(0, cfg["vocab"], (16, 21), generator=g)
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
