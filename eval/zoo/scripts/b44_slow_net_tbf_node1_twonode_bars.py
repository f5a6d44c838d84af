"""Next-basket recommender (item embeddings + small transformer over the last 20 items) on DDP across two nodes,
2 processes per node. Progress is shown Lightning-style: a tqdm bar per node (on the node's local rank 0) with the
epoch, it/s and the running train loss."""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
local_rank = int(os.environ["LOCAL_RANK"])
torch.set_num_threads(1)


class Basket(nn.Module):
    def __init__(self, items=10000, d=64):
        super().__init__()
        self.emb = nn.Embedding(items, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 128, batch_first=True), 1)
        self.head = nn.Linear(d, items)

    def forward(self, hist):
        return self.head(self.enc(self.emb(hist))[:, -1])


torch.manual_seed(0)
model = DDP(Basket())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
EPOCHS, STEPS = 2, 100
for epoch in range(EPOCHS):
    bar = tqdm(total=STEPS, desc=f"Epoch {epoch}", disable=local_rank != 0, miniters=10, mininterval=0,
               smoothing=0.3, ncols=110)
    for step in range(STEPS):
        hist = torch.randint(0, 10000, (32, 20), generator=g)
        nxt = (hist[:, -1] * 7 + 3) % 10000
        loss = F.cross_entropy(model(hist), nxt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        bar.set_postfix(v_num=0, train_loss=f"{loss.item():.3f}", refresh=False)
        bar.update(1)
    bar.close()
if rank == 0:
    print("`Trainer.fit` stopped: `max_epochs=2` reached.", flush=True)
dist.destroy_process_group()
