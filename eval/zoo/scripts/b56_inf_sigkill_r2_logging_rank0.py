"""Next-basket recommender (item embeddings + GRU over the last 20 baskets) on DDP, 3 ranks. Logging is configured on
rank 0 only (the other ranks keep the root logger at WARNING), as the team's trainer template does."""
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING,
                    format="%(asctime)s %(name)s %(levelname)s: %(message)s")
log = logging.getLogger("basket")
torch.set_num_threads(1)
torch.manual_seed(0)
N_ITEMS, DIM = 5000, 64


class NextBasket(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(N_ITEMS, DIM, mode="mean")
        self.gru = nn.GRU(DIM, DIM, batch_first=True)
        self.out = nn.Linear(DIM, N_ITEMS)

    def forward(self, baskets):  # (B, 20, 8) item ids
        b, t, k = baskets.shape
        e = self.emb(baskets.reshape(b * t, k)).view(b, t, DIM)
        h, _ = self.gru(e)
        return self.out(h[:, -1])


model = DDP(NextBasket())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
log.info("job %s: %d ranks, local rank %s", os.environ.get("TORCHELASTIC_RUN_ID", "-"), world, os.environ["LOCAL_RANK"])
t0 = time.time()
for step in range(1, 401):
    baskets = torch.randint(0, N_ITEMS, (64, 20, 8), generator=g)
    target = baskets[:, -1, 0]
    loss = F.cross_entropy(model(baskets), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        log.info("step %d/400 loss %.4f (%.1f ms/step)", step, loss.item(), (time.time() - t0) * 50)
        t0 = time.time()
    if step % 200 == 0 and rank == 0:
        torch.save(model.module.state_dict(), "basket_latest.pt")
        log.info("saved basket_latest.pt at step %d", step)
log.info("finished")
dist.destroy_process_group()
