"""Document-layout classifier (MLP over 2,048 hashed layout features) on DDP across two nodes, 2 processes per node;
python logging with the node and rank in every line."""
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
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["GROUP_RANK"])
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s [node{node} rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("layout")
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(2048, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 11)))
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
g = torch.Generator().manual_seed(rank)
STEPS = 400
log.info("world %d, %d steps", world, STEPS)
t0 = time.time()
for step in range(1, STEPS + 1):
    x = torch.rand(48, 2048, generator=g)
    y = (x[:, :11].argmax(1) + step) % 11
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        log.info("step %d/%d loss %.4f %.1f ms/step", step, STEPS, loss.item(), 1000 * (time.time() - t0) / 20)
        t0 = time.time()
log.info("finished")
dist.destroy_process_group()
