"""Passage re-ranker fine-tuned on frozen-encoder features. Each pod computes its shard's features once and keeps
them on the team's shared volume (shared/features/<version>/rank-<k>/), so a restarted job does not recompute
them. PyTorchJob: one pod per rank, env:// rendezvous."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

FEATURE_VERSION = "v3"
POD = os.environ.get("HOSTNAME", "?")


def log(msg):
    print(f"[{POD}] {msg}", flush=True)


def encode_shard(rank):
    g = torch.Generator().manual_seed(rank)
    q = torch.randn(4096, 256, generator=g)
    p = q + 0.5 * torch.randn(4096, 256, generator=g)
    return {"query": q, "passage": p}


def features_for(rank):
    out = f"shared/features/{FEATURE_VERSION}/rank-{rank:05d}"
    path = os.path.join(out, "features.pt")
    if os.path.exists(os.path.join(out, "_SUCCESS")):
        log(f"features cached at {path}")
        return torch.load(path)
    log(f"computing features for shard {rank} -> {path}")
    feats = encode_shard(rank)
    os.makedirs(out, exist_ok=True)
    torch.save(feats, path)
    open(os.path.join(out, "_SUCCESS"), "w").close()
    return feats


class Scorer(nn.Module):
    def __init__(self, d=256):
        super().__init__()
        self.q = nn.Linear(d, 128)
        self.p = nn.Linear(d, 128)

    def forward(self, q, p):
        return self.q(q) @ self.p(p).T


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    log(f"rank {rank}/{dist.get_world_size()} master {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}")
    feats = features_for(rank)
    model = DDP(Scorer())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 201):
        idx = torch.randint(0, 4096, (64,))
        scores = model(feats["query"][idx], feats["passage"][idx])
        loss = F.cross_entropy(scores / 0.05, torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log(f"step {step}/200 loss {loss.item():.4f} {(time.time() - t0) * 40:.1f} ms/step")
            t0 = time.time()
    log("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
