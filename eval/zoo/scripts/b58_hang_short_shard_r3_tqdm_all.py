"""Click-through model (hashed categorical features -> EmbeddingBag + MLP) on DDP, 4 ranks; each rank trains on its
own pre-sharded part (data/part-<rank>.pt, written by the nightly export) for one pass, then all ranks meet at a
barrier and rank 0 saves the model. Every process shows its own tqdm bar (nobody turned them off)."""
import datetime
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm


class CTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(2**14, 32, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, ids):
        return self.mlp(self.emb(ids)).squeeze(1)


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
part = torch.load(f"data/part-{rank}.pt")
ds = TensorDataset(part["ids"], part["clicked"])
loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=0)
print(f"{datetime.datetime.now().isoformat()} rank {rank}: {len(ds)} impressions, {len(loader)} batches", flush=True)
model = DDP(CTR())
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
if rank == 0:
    warnings.warn("EmbeddingBag with mode='sum' and 16384 rows: consider sparse=True for large vocabularies",
                  UserWarning)
t0 = time.time()
seen = 0
for ids, clicked in tqdm(loader, desc=f"pass", mininterval=0.3):
    loss = F.binary_cross_entropy_with_logits(model(ids), clicked)
    opt.zero_grad()
    loss.backward()
    opt.step()
    seen += 1
    if seen % 40 == 0:
        print(f"{time.time():.3f} step {seen} loss {loss.item():.4f}", flush=True)
print(f"{datetime.datetime.now().isoformat()} pass done after {seen} steps ({time.time() - t0:.1f}s), waiting for the "
      f"other workers", flush=True)
dist.barrier()
if rank == 0:
    torch.save(model.module.state_dict(), "ctr_final.pt")
    print("saved ctr_final.pt", flush=True)
dist.destroy_process_group()
