"""Product-image embedding model (MLP projection head over precomputed CNN features, cosine-similarity contrastive
loss) on DDP, 4 processes, each on its own feature shard (data/img-feats-<rank>.pt). The loss is checked every step:
a non-finite loss stops the job."""
import datetime
import math
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
data = torch.load(f"data/img-feats-{rank}.pt")
feats, labels = data["feats"], data["labels"]
BATCH, STEPS = 64, 240


def l2n(v):
    return v / v.norm(dim=-1, keepdim=True)


head = DDP(nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 128)))
opt = torch.optim.AdamW(head.parameters(), lr=1e-3)
print(f"step 0: rank {rank} has {len(feats)} images", flush=True)
t0 = time.time()
for step in range(1, STEPS + 1):
    i = ((step - 1) * BATCH) % len(feats)
    x, y = feats[i:i + BATCH], labels[i:i + BATCH]
    z = l2n(head(l2n(x)))
    sim = z @ z.T / 0.1
    pos = (y[:, None] == y[None, :]).float().fill_diagonal_(0)
    logp = sim.fill_diagonal_(-1e4).log_softmax(1)
    loss = -(logp * pos).sum(1).div(pos.sum(1).clamp_min(1)).mean()
    if not math.isfinite(loss.item()):
        raise FloatingPointError(f"loss is {loss.item()} at step {step}; stopping before the update")
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step}/{STEPS} loss {loss.item():.4f} {1000 * (time.time() - t0) / 20:.0f} ms/step", flush=True)
        t0 = time.time()
print("done", flush=True)
dist.destroy_process_group()
