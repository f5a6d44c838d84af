"""Ad-hoc retrieval bi-encoder on DDP across two nodes x 2 ranks. Every 100 steps the two ranks of each node evaluate
together on their node-local validation shard: a per-node group is built for the evaluation and its loss averaged
in that group."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

TIMEOUT = datetime.timedelta(seconds=25)
dist.init_process_group("gloo", timeout=TIMEOUT)
rank, world = dist.get_rank(), dist.get_world_size()
node, local = int(os.environ["GROUP_RANK"]), int(os.environ["LOCAL_RANK"])
nlocal = int(os.environ["LOCAL_WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(2)
enc = nn.Sequential(nn.EmbeddingBag(30000, 96, mode="mean"), nn.Linear(96, 128), nn.Tanh(), nn.Linear(128, 64))
model = DDP(enc)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
val = torch.randint(0, 30000, (512, 20), generator=torch.Generator().manual_seed(node))


def contrastive(q, d):
    s = F.normalize(q, dim=1) @ F.normalize(d, dim=1).T / 0.05
    return F.cross_entropy(s, torch.arange(len(q)))


t = time.time()
for step in range(1, 501):
    q = torch.randint(0, 30000, (64, 12), generator=g)
    d = torch.cat([q[:, :6], torch.randint(0, 30000, (64, 14), generator=g)], 1)
    loss = contrastive(model(q), model(d))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"rank {rank} (node {node}) step {step} loss {loss.item():.4f} {(time.time() - t) / 20:.3f}s/step", flush=True)
        t = time.time()
    if step % 100 == 0:
        # every rank builds every node's group (new_group is collective), then uses its own node's
        groups = [dist.new_group(list(range(n * nlocal, (n + 1) * nlocal)), timeout=TIMEOUT) for n in range(world // nlocal)]
        with torch.no_grad():
            part = val[local::nlocal]
            vl = contrastive(enc(part[:, :10]), enc(part[:, 10:])).reshape(1)
        dist.all_reduce(vl, group=groups[node])
        print(f"rank {rank} (node {node}) step {step} node-local val loss {vl.item() / nlocal:.4f}", flush=True)
dist.destroy_process_group()
