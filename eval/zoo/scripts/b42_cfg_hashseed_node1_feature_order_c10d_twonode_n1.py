"""CTR model (embeddings of the categorical request features + MLP), DDP over two nodes with the c10d
rendezvous, 2 ranks per node. Features and their cardinalities come from the feature spec."""
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

CATEGORICAL = {"country", "device_model", "app_id", "hour", "os_version", "carrier"}
CARDINALITY = {"country": 250, "device_model": 4000, "app_id": 12000, "hour": 24, "os_version": 90, "carrier": 600}
DENSE = 13

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])
tag = f"[node{node} rank{rank}]"


class CTR(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.emb = nn.ModuleDict({name: nn.Embedding(CARDINALITY[name], dim) for name in CATEGORICAL})
        self.mlp = nn.Sequential(nn.Linear(dim * len(CATEGORICAL) + DENSE, 256), nn.ReLU(), nn.Linear(256, 64),
                                 nn.ReLU(), nn.Linear(64, 1))

    def forward(self, cats, dense):
        e = [self.emb[name](cats[name]) for name in self.emb]
        return self.mlp(torch.cat(e + [dense], 1)).squeeze(1)


model = CTR()
print(f"{tag} features {list(model.emb)}", flush=True)
model = DDP(model)
opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in range(1, 401):
    cats = {n: torch.randint(0, CARDINALITY[n], (256,), generator=g) for n in CATEGORICAL}
    dense = torch.randn(256, DENSE, generator=g)
    y = (dense[:, 0] > 0.5).float()
    loss = F.binary_cross_entropy_with_logits(model(cats, dense), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"{tag} step {step}/400 logloss {loss.item():.4f} {(time.time() - t0) * 20:.1f} ms/step", flush=True)
        t0 = time.time()
dist.destroy_process_group()
