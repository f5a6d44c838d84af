"""Dual-encoder for product search (query tower + item tower, in-batch negatives), DDP over gloo, one process per
node. Every 150 steps each rank embeds its half of the validation pairs, the halves are all-gathered and recall@10
is computed over the full query x item similarity matrix. JSON-lines logs (one object per line) for the log
pipeline."""
import json
import os
import socket
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

NODE = os.environ.get("GROUP_RANK", "0")


def jlog(level, msg, **kv):
    rec = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "level": level, "host": socket.gethostname(), "node": int(NODE),
           "rank": int(os.environ.get("RANK", "0")), "msg": msg, **kv}
    print(json.dumps(rec), file=sys.stdout if level != "error" else sys.stderr, flush=True)


class Tower(nn.Module):
    def __init__(self, vocab=20000, d=128):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, d, mode="mean")
        self.proj = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 128))

    def forward(self, ids):
        return F.normalize(self.proj(self.emb(ids)), dim=-1)


class DualEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.d = Tower(), Tower()

    def forward(self, q, d):
        return self.q(q), self.d(d)


def pairs(n, seed):
    g = torch.Generator().manual_seed(seed)
    item = torch.randint(0, 20000, (n, 12), generator=g)
    query = torch.where(torch.rand(n, 12, generator=g) < 0.6, item, torch.randint(0, 20000, (n, 12), generator=g))
    return query, item


@torch.no_grad()
def recall_at_10(model, vq, vd, world):
    model.eval()
    q, d = model.module.q(vq), model.module.d(vd)
    qs, ds = [torch.empty_like(q) for _ in range(world)], [torch.empty_like(d) for _ in range(world)]
    dist.all_gather(qs, q)
    dist.all_gather(ds, d)
    q, d = torch.cat(qs), torch.cat(ds)
    sims = q @ d.T  # every query against every item of the validation set
    top = sims.topk(10, dim=1).indices
    hit = (top == torch.arange(len(q))[:, None]).any(1).float().mean()
    model.train()
    return hit.item(), len(q)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    jlog("info", "process group ready", world_size=world, backend="gloo")
    torch.manual_seed(0)
    model = DDP(DualEncoder())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tq, td = pairs(40000, 10 + rank)
    vq, vd = pairs(12000 // world, 100 + rank)
    jlog("info", "data ready", train_pairs=len(tq), valid_pairs_per_rank=len(vq))
    t0 = time.time()
    for step in range(1, 601):
        i = (step * 128) % (len(tq) - 128)
        qe, de = model(tq[i:i + 128], td[i:i + 128])
        loss = F.cross_entropy(qe @ de.T / 0.05, torch.arange(128))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            jlog("info", "train", step=step, loss=round(loss.item(), 4), ms_per_step=round((time.time() - t0) / 25 * 1000, 1))
            t0 = time.time()
        if step % 150 == 0:
            jlog("info", "eval start", step=step)
            r10, n = recall_at_10(model, vq, vd, world)
            jlog("info", "eval", step=step, recall_at_10=round(r10, 4), queries=n)
            t0 = time.time()
    jlog("info", "training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
