"""CTR model (hashed feature embeddings + MLP) on DDP, 3 processes. Rank 0 reads the run's curriculum plan (which
feature groups are switched on at which step) and broadcasts it to the other ranks with broadcast_object_list, so that
every rank follows the same plan."""
import datetime
import json
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
GROUPS = ["user", "item", "context", "cross"]

plan = [None]
if rank == 0:
    cfg = json.load(open("configs/curriculum.json"))
    warm = cfg["warmup_steps"]
    plan[0] = {
        "groups_at": {g: cfg["enable_at"][g] for g in GROUPS},
        "dropout": cfg["dropout"],
        # loss weight of the auxiliary calibration head: ramped up over the warmup
        "aux_weight": lambda step: min(1.0, step / warm) * cfg["aux_weight"],
    }
    print(f"[rank0] curriculum plan: {plan[0]['groups_at']}", flush=True)
dist.broadcast_object_list(plan, src=0)
plan = plan[0]


class CTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleDict({g: nn.EmbeddingBag(2 ** 16, 16, mode="sum") for g in GROUPS})
        self.mlp = nn.Sequential(nn.Linear(16 * len(GROUPS), 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, feats, on):
        return self.mlp(torch.cat([self.emb[g](feats[g]) * on[g] for g in GROUPS], 1))


model = DDP(CTR())
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in range(1, 201):
    feats = {k: torch.randint(0, 2 ** 16, (128, 8), generator=g) for k in GROUPS}
    y = (feats["user"][:, 0] % 5 == 0).long()
    on = {k: float(step >= plan["groups_at"][k]) for k in GROUPS}
    out = model(feats, on)
    loss = F.cross_entropy(out[:, :2], y) * (1 + plan["aux_weight"](step))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0 and rank == 0:
        print(f"[rank0] step {step}/200 loss {loss.item():.4f} {1000 * (time.time() - t0) / 25:.0f} ms/step", flush=True)
        t0 = time.time()
dist.destroy_process_group()
