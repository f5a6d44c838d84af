"""Query-intent classifier (bag-of-embeddings + MLP) trained data-parallel on two CPU nodes, one process per node,
DDP over gloo. Logs every 20 steps with the mean step time of the window."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank{RANK}] %(message)s", level=logging.INFO)
log = logging.getLogger("intent")
STEPS = 900


class Intent(nn.Module):
    def __init__(self, vocab=20000, dim=48, n_cls=64):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, n_cls))

    def forward(self, ids):
        return self.mlp(self.emb(ids))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    log.info("world size %d, backend %s", dist.get_world_size(), dist.get_backend())
    torch.manual_seed(0)
    model = DDP(Intent())
    log.info("model has %.2fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(100 + RANK)
    t_win = time.perf_counter()
    for step in range(1, STEPS + 1):
        ids = torch.randint(0, 20000, (64, 24), generator=g)
        y = ids[:, 0] % 64
        loss = nn.functional.cross_entropy(model(ids), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 20 == 0:
            ms = (time.perf_counter() - t_win) * 1000 / 20
            log.info("step %d/%d loss %.4f step_time_ms %.1f", step, STEPS, loss.item(), ms)
            t_win = time.perf_counter()
    log.info("training done, %d steps", STEPS)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
