"""Query-tower encoder for retrieval (transformer layers over token ids), DDP over gloo on two nodes with a c10d
rendezvous; one JSON object per log line; the depth comes from the command line."""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def log(**kv):
    print(json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "rank": int(os.environ["RANK"]),
                      "node": int(os.environ["GROUP_RANK"]), **kv}), flush=True)


class QueryTower(nn.Module):
    def __init__(self, layers, d=128):
        super().__init__()
        self.tok = nn.Embedding(16000, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 256, batch_first=True), layers)
        self.proj = nn.Linear(d, 64)

    def forward(self, x):
        return nn.functional.normalize(self.proj(self.enc(self.tok(x)).mean(1)), dim=-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    log(event="init", world_size=dist.get_world_size(), layers=args.layers)
    model = QueryTower(args.layers)
    log(event="model", params=sum(p.numel() for p in model.parameters()))
    model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(1, args.steps + 1):
        q = torch.randint(0, 16000, (32, 16))
        d = torch.randint(0, 16000, (32, 16))
        loss = nn.functional.cross_entropy(model(q) @ model(d).T / 0.05, torch.arange(32))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log(event="step", step=step, loss=round(loss.item(), 4))
    log(event="done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
