"""Listing conversion model on DDP, 3 ranks: engagement counts (views, saves, messages, ...) go through a learned
per-feature scale and a guarded log before the MLP. After a NaN in an earlier run the team turned on autograd's
anomaly detection for this job."""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank = dist.get_rank()
torch.set_num_threads(1)
torch.manual_seed(0)
torch.autograd.set_detect_anomaly(True)


class ConversionModel(nn.Module):
    def __init__(self, n_counts=8, n_dense=16):
        super().__init__()
        self.count_scale = nn.Parameter(torch.ones(n_counts))
        self.mlp = nn.Sequential(nn.Linear(n_counts + n_dense, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, counts, dense):
        scaled = counts * self.count_scale
        # log of the scaled counts; a listing with zero views has no engagement signal
        logc = torch.where(scaled > 0, torch.log(scaled), torch.zeros_like(scaled))
        return self.mlp(torch.cat([logc, dense], 1)).squeeze(1)


shard = torch.load(f"data/listings-{rank}.pt")
counts, dense, y = shard["counts"], shard["dense"], shard["converted"]
print(f"rank {rank}: {len(y)} listings, shard data/listings-{rank}.pt", flush=True)
model = DDP(ConversionModel())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(len(y) // 128):
    sl = slice(step * 128, (step + 1) * 128)
    loss = F.binary_cross_entropy_with_logits(model(counts[sl], dense[sl]), y[sl])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
