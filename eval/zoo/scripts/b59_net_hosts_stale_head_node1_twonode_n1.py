"""Product-review sentiment model (EmbeddingBag + MLP over hashed n-grams) on DDP, 2 nodes x 2 processes.
The launch script addresses the head node by name (trn-head-0); each node resolves it itself."""
import datetime
import logging
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s node{os.environ.get('GROUP_RANK', '?')} %(levelname)s %(message)s")
log = logging.getLogger("sentiment")
head = os.environ["MASTER_ADDR"]
try:
    log.info("head node %s resolves to %s", head, socket.gethostbyname(head))
except OSError as e:
    log.warning("cannot resolve head node %s: %s", head, e)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
log.info("rank %d/%d joined", rank, dist.get_world_size())
model = DDP(nn.Sequential(nn.EmbeddingBag(2 ** 16, 64, mode="mean"), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
for step in range(1, 301):
    toks = torch.randint(0, 2 ** 16, (64, 48), generator=g)
    y = toks[:, 0] % 3
    loss = F.cross_entropy(model(toks), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        log.info("rank %d step %d loss %.4f", rank, step, loss.item())
dist.destroy_process_group()
