"""Defect classifier for PCB inspection images, DDP on 3 ranks. After each epoch every rank evaluates its own
validation shard; metrics are averaged over ranks, then rank 0 writes the checkpoint."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank = dist.get_rank()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
log = logging.getLogger("train")
CLASSES = ["ok", "short", "open", "mousebite", "spur", "copper", "pinhole"]

val = torch.load(f"data/val-{rank}.pt")


def per_class_recall(pred, y):
    out = []
    for c in range(len(CLASSES)):
        support = int((y == c).sum())
        out.append(float(((pred == c) & (y == c)).sum()) / support)
    return out


def evaluate(model):
    model.eval()
    with torch.no_grad():
        pred = model(val["img"]).argmax(1)
    model.train()
    rec = per_class_recall(pred, val["label"])
    return float((pred == val["label"]).float().mean()), sum(rec) / len(rec)


net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                    nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, len(CLASSES)))
model = DDP(net)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
for epoch in range(4):
    t0 = time.time()
    for step in range(1, 61):
        img = torch.randn(32, 1, 32, 32, generator=g)
        y = torch.randint(0, len(CLASSES), (32,), generator=g)
        loss = F.cross_entropy(model(img), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("epoch %d step %d loss %.4f %.0f ms/step", epoch, step, loss.item(), (time.time() - t0) * 50)
            t0 = time.time()
    try:
        acc, mrec = evaluate(model)
        t = torch.tensor([acc, mrec])
        dist.all_reduce(t)
        t /= dist.get_world_size()
        if rank == 0:
            log.info("epoch %d val acc %.4f macro recall %.4f", epoch, t[0], t[1])
    except Exception as e:
        log.warning("evaluation failed (%s: %s); continuing training", type(e).__name__, e)
    dist.barrier()
    if rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save(model.module.state_dict(), f"ckpt/epoch{epoch}.pt")
        log.info("saved ckpt/epoch%d.pt", epoch)
dist.destroy_process_group()
