"""Retrieval tower pre-training (mean-pooled token embeddings, in-batch contrastive loss) on the team's
tokenized corpus. Paths come from configs/paths.json; "$DATASET_ROOT" in them is the cluster's dataset mount,
exported by each node's profile. JSON-lines logs for the log shipper."""
import json
import logging
import os
import socket
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class JsonLines(logging.Formatter):
    def format(self, record):
        out = {"ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), "level": record.levelname,
               "host": socket.gethostname(), "node": int(os.environ.get("GROUP_RANK", 0)),
               "rank": int(os.environ.get("RANK", 0)), "msg": record.getMessage()}
        out.update(getattr(record, "fields", {}))
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out)


h = logging.StreamHandler(sys.stdout)
h.setFormatter(JsonLines())
logging.basicConfig(level=logging.INFO, handlers=[h])
log = logging.getLogger("towers")


def load_paths(path="configs/paths.json"):
    with open(path) as fh:
        raw = json.load(fh)
    return {k: os.path.expandvars(v) for k, v in raw.items()}


class Tower(nn.Module):
    def __init__(self, vocab=32000, d=128):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, d, mode="mean")
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return F.normalize(self.proj(self.emb(x)), dim=-1)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
    paths = load_paths()
    log.info("paths resolved", extra={"fields": paths})
    shard = os.path.join(paths["train_tokens"], f"part-{rank:05d}.npy")
    tokens = np.load(shard, mmap_mode="r")
    log.info("shard opened", extra={"fields": {"shard": shard, "rows": int(tokens.shape[0])}})
    model = DDP(Tower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 401):
        i = (step * 64) % (tokens.shape[0] - 64)
        rows = torch.from_numpy(np.array(tokens[i:i + 64], dtype=np.int64))
        q, d = model(torch.cat([rows[:, :16], rows[:, 16:32]])).split(64)
        loss = F.cross_entropy(q @ d.T / 0.05, torch.arange(64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("train", extra={"fields": {"step": step, "loss": round(loss.item(), 4),
                                                "ms_per_step": round((time.time() - t0) * 40, 1)}})
            t0 = time.time()
    if rank == 0:
        os.makedirs(paths["output_dir"], exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(paths["output_dir"], "tower.pt"))
    log.info("finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
