"""Satellite-tile land-cover classifier (ResNet-ish, 0.7M parameters) on DDP across two nodes x 2 processes.
Rank 0 reads the run config and broadcasts it; the ranks agree on the shard sizes before building the model."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
node = os.environ.get("GROUP_RANK", "0")
torch.set_num_threads(1)
say = lambda msg: print(f"{time.strftime('%H:%M:%S')} [node{node}:rank{rank}] {msg}", flush=True)
say(f"joined process group ({world} ranks)")
cfg = [json.load(open("configs/landcover.json")) if rank == 0 else None]
dist.broadcast_object_list(cfg, src=0)
cfg = cfg[0]
say(f"config from rank 0: {cfg}")
n_local = torch.tensor([2048 + 64 * rank])
dist.all_reduce(n_local)
say(f"tiles in the job: {int(n_local)}")
dist.barrier()


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2))


torch.manual_seed(0)
net = nn.Sequential(block(4, 32), block(32, 64), block(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                    nn.Linear(128, cfg["classes"]))
say(f"model {sum(p.numel() for p in net.parameters()) / 1e6:.2f}M parameters, wrapping in DDP")
model = DDP(net)
say("DDP ready")
opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
g = torch.Generator().manual_seed(rank)
for step in range(1, cfg["steps"] + 1):
    x = torch.randn(16, 4, 32, 32, generator=g)
    y = torch.randint(0, cfg["classes"], (16,), generator=g)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        say(f"step {step}/{cfg['steps']} loss {loss.item():.4f}")
dist.destroy_process_group()
