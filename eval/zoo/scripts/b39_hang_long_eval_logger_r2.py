"""Product-title encoder trained with in-batch negatives; every 100 steps each rank checks recall@10 on its own
validation shard (no cross-rank reduction: each rank logs its own number) and goes on training. torchrun, python
logging with the rank in the logger name."""
import logging
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")


class Tower(nn.Module):
    def __init__(self, vocab=30000, d=128):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, d, mode="mean")
        self.proj = nn.Sequential(nn.Linear(d, d), nn.Tanh(), nn.Linear(d, d))

    def forward(self, ids):
        return F.normalize(self.proj(self.emb(ids)), dim=-1)


def recall_at_10(model, val, log):
    hits, n = 0, len(val["query"])
    with torch.no_grad():
        cat = model(val["title"])
        for i in range(0, n, 64):
            q = model(val["query"][i:i + 64])
            top = (q @ cat.T).topk(10, dim=-1).indices
            hits += (top == torch.arange(i, i + len(q))[:, None]).any(-1).sum().item()
            if (i // 64) % 100 == 99:
                log.info("  eval %d/%d queries", i + 64, n)
    return hits / n


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    log = logging.getLogger(f"titles.rank{rank}")
    train = torch.load(f"data/pairs_train_{rank}.pt")
    val = torch.load(f"data/pairs_val_{rank}.pt")
    log.info("train pairs %d, val pairs %d", len(train["query"]), len(val["query"]))
    model = DDP(Tower())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, 301):
        idx = torch.randint(0, len(train["query"]), (128,))
        q, t = model(train["query"][idx]), model(train["title"][idx])
        loss = F.cross_entropy(q @ t.T / 0.05, torch.arange(128))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            log.info("step %d/300 loss %.4f %.1f ms/step", step, loss.item(), (time.time() - t0) * 40)
            t0 = time.time()
        if step % 100 == 0:
            te = time.time()
            log.info("step %d: evaluating recall@10 on %d val pairs", step, len(val["query"]))
            model.eval()
            r10 = recall_at_10(model.module, val, log)
            model.train()
            log.info("step %d val recall@10 %.4f (%.1f s)", step, r10, time.time() - te)
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
