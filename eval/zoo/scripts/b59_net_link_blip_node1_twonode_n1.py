"""Next-basket recommender (GRU over item sequences) on DDP, 2 nodes x 2 processes; python logging per rank every 20 steps,
step time included."""
import datetime
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s.%(msecs)03d node{os.environ.get('GROUP_RANK', '0')}/rank{rank} %(levelname)s %(message)s",
                    datefmt="%H:%M:%S")
log = logging.getLogger("basket")
torch.set_num_threads(1)
torch.manual_seed(11)


class NextBasket(nn.Module):
    def __init__(self, items=12000, d=64):
        super().__init__()
        self.emb = nn.Embedding(items, d)
        self.gru = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, items)

    def forward(self, seq):
        h, _ = self.gru(self.emb(seq))
        return self.out(h[:, -1])


model = DDP(NextBasket())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
t = time.time()
for step in range(1, 401):
    seq = torch.randint(0, 12000, (48, 16), generator=g)
    loss = F.cross_entropy(model(seq[:, :-1]), seq[:, -1])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        log.info("step %d/400 loss %.4f step_time %.3fs", step, loss.item(), (time.time() - t) / 20)
        t = time.time()
log.info("training done")
dist.destroy_process_group()
