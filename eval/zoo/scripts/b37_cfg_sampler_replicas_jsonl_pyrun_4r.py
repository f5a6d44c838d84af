"""Image-tagging fine-tune (small CNN on 48x48 thumbnails, multi-label) driven by the team's JSON run config;
DDP over gloo. JSON-lines logs through python logging (the cluster's log collector indexes them)."""
import json
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class JsonFormatter(logging.Formatter):
    def format(self, record):
        out = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
               "rank": int(os.environ.get("RANK", 0)), "message": record.getMessage()}
        out.update(getattr(record, "fields", {}))
        return json.dumps(out)


handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(JsonFormatter())
logging.basicConfig(level=logging.INFO, handlers=[handler])
log = logging.getLogger("tagger")


def build_loader(cfg, rank, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(cfg["train_size"], 3, 48, 48, generator=g)
    y = (torch.rand(cfg["train_size"], cfg["num_tags"], generator=g) < 0.1).float()
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds, num_replicas=cfg["distributed"]["world_size"], rank=rank, shuffle=True,
                                 seed=cfg["seed"])
    return DataLoader(ds, batch_size=cfg["batch_size"], sampler=sampler, drop_last=True), sampler


def main():
    cfg = json.load(open(sys.argv[1]))
    dist.init_process_group(cfg["distributed"]["backend"], timeout=timedelta(seconds=cfg["distributed"]["timeout_s"]))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("config loaded", extra={"fields": {"config": sys.argv[1], "world_size": world, **cfg}})
    torch.manual_seed(cfg["seed"])
    model = DDP(nn.Sequential(nn.Conv2d(3, 32, 3, stride=2), nn.ReLU(), nn.Conv2d(32, 64, 3, stride=2), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, cfg["num_tags"])))
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
    loader, sampler = build_loader(cfg, rank, seed=rank)
    log.info("data ready", extra={"fields": {"batches_per_epoch": len(loader)}})
    for epoch in range(cfg["epochs"]):
        sampler.set_epoch(epoch)
        t0 = time.time()
        for step, (x, y) in enumerate(loader, 1):
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                log.info("train", extra={"fields": {"epoch": epoch, "step": step, "loss": round(loss.item(), 4),
                                                    "ms_per_step": round((time.time() - t0) * 100, 1)}})
                t0 = time.time()
    log.info("finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
