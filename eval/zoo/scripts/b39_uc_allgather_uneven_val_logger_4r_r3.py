"""Toxicity classifier over sentence embeddings. Every 100 steps each rank scores its validation shard and the
scores are gathered so that the global ROC-AUC can be computed. torchrun, python logging with the rank in the
logger name."""
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def auc(scores, labels):
    order = scores.argsort()
    ranks = torch.empty_like(order, dtype=torch.float)
    ranks[order] = torch.arange(1, len(scores) + 1, dtype=torch.float)
    pos = labels.bool()
    n_pos, n_neg = pos.sum().item(), (~pos).sum().item()
    return (ranks[pos].sum().item() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    log = logging.getLogger(f"toxic.rank{rank}")
    tr = torch.load(f"data/train_{rank}.pt")
    va = torch.load(f"data/val_{rank}.pt")
    log.info("train %d rows, val %d rows", len(tr["y"]), len(va["y"]))
    model = DDP(nn.Sequential(nn.Linear(384, 256), nn.GELU(), nn.Dropout(0.1), nn.Linear(256, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 401):
        idx = torch.randint(0, len(tr["y"]), (64,))
        loss = F.binary_cross_entropy_with_logits(model(tr["x"][idx]).squeeze(-1), tr["y"][idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d/400 loss %.4f %.1f ms/step", step, loss.item(), (time.time() - t0) * 40)
            t0 = time.time()
        if step % 100 == 0:
            model.eval()
            with torch.no_grad():
                scores = model(va["x"]).squeeze(-1)
            model.train()
            all_scores = [torch.empty_like(scores) for _ in range(world)]
            all_labels = [torch.empty_like(va["y"]) for _ in range(world)]
            dist.all_gather(all_scores, scores)
            dist.all_gather(all_labels, va["y"])
            if rank == 0:
                log.info("step %d val_auc %.4f", step, auc(torch.cat(all_scores), torch.cat(all_labels)))
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
