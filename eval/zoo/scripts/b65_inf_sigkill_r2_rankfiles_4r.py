"""Click-through ranker (embedding bag + MLP) on DDP, 4 ranks. Every rank logs to its own file, logs/rank<R>.log
(the cluster's log shipper picks them up from there); only uncaught errors reach the terminal."""
import datetime
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

rank = int(os.environ["RANK"])
os.makedirs("logs", exist_ok=True)
log = logging.getLogger("ranker")
log.setLevel(logging.INFO)
h = logging.FileHandler(f"logs/rank{rank}.log")
h.setFormatter(logging.Formatter(f"%(asctime)s.%(msecs)03d rank{rank} %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S"))
log.addHandler(h)

STEPS, BATCH, FIELDS, VOCAB = 400, 256, 12, 20000


class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 32, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, ids):
        return self.mlp(self.emb(ids)).squeeze(-1)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    world = dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(Ranker())
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1000 + rank)
    log.info("started: world_size=%d batch=%d steps=%d", world, BATCH, STEPS)
    step = 0
    try:
        for step in range(1, STEPS + 1):
            ids = torch.randint(0, VOCAB, (BATCH, FIELDS), generator=g)
            y = ((ids % 7 == 0).sum(1) > 1).float()
            loss = F.binary_cross_entropy_with_logits(model(ids), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                log.info("step %d/%d loss %.4f", step, STEPS, loss.item())
    except Exception:
        log.exception("training failed at step %d", step)
        raise
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
