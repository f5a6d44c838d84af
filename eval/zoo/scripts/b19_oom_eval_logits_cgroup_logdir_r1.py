"""Next-item recommender (item embeddings + GRU), DDP over gloo; every 100 steps each rank scores its validation
users against the full item catalogue to compute recall@20."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s [rank%(rank)s] %(message)s", level=logging.INFO)
RANK = int(os.environ["RANK"])
log = logging.LoggerAdapter(logging.getLogger("recsys"), {"rank": RANK})
ITEMS, DIM = 60000, 64


class Rec(nn.Module):
    def __init__(self):
        super().__init__()
        self.items = nn.Embedding(ITEMS, DIM)
        self.gru = nn.GRU(DIM, DIM, batch_first=True)

    def forward(self, seq):
        return self.gru(self.items(seq))[0][:, -1]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(RANK)
    model = DDP(Rec())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    val_users = torch.randint(0, ITEMS, (1500, 20))
    val_next = torch.randint(0, ITEMS, (1500,))
    t0 = time.time()
    for step in range(1, 401):
        seq = torch.randint(0, ITEMS, (64, 20))
        nxt = torch.randint(0, ITEMS, (64,))
        h = model(seq)
        loss = nn.functional.cross_entropy(h @ model.module.items.weight.T, nxt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("step %d loss %.4f %.1fs", step, loss.item(), time.time() - t0)
        if step % 100 == 0:
            with torch.no_grad():
                scores = model.module(val_users) @ model.module.items.weight.T  # users x catalogue
                top = scores.topk(20, dim=1).indices
                recall = (top == val_next[:, None]).any(1).float().mean()
            dist.all_reduce(recall)
            log.info("step %d recall@20 %.4f", step, recall.item() / dist.get_world_size())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
