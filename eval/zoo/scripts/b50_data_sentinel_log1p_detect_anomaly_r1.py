"""Customer-churn classifier (MLP over order-history features) on DDP, 3 ranks. Each rank reads one partition of the
feature table (data/part-<rank>.parquet); heavy-tailed columns are log1p-transformed. Since last week's NaN scare
the job runs with --detect-anomaly."""
import argparse
import datetime
import logging
import time

import numpy as np
import pandas as pd
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

LOG_COLS = ["order_value", "days_since_last", "n_items", "support_tickets"]
RAW_COLS = ["is_member", "region_code", "discount_rate", "returns_ratio"]

ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--detect-anomaly", action="store_true")
args = ap.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
log = logging.getLogger("churn")
torch.set_num_threads(1)
if args.detect_anomaly:
    torch.autograd.set_detect_anomaly(True)

df = pd.read_parquet(f"data/part-{rank}.parquet")
feats = np.concatenate([np.log1p(df[LOG_COLS].to_numpy(np.float32)), df[RAW_COLS].to_numpy(np.float32)], axis=1)
ds = TensorDataset(torch.from_numpy(feats), torch.from_numpy(df["churned"].to_numpy()).long())
loader = DataLoader(ds, batch_size=64, shuffle=False)
log.info("partition data/part-%d.parquet: %d customers, %d features", rank, len(ds), feats.shape[1])
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
t0 = time.time()
for epoch in range(args.epochs):
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("epoch %d step %d/%d loss %.4f (%.1fs)", epoch, step, len(loader), loss.item(), time.time() - t0)
dist.barrier()
if rank == 0:
    torch.save(model.module.state_dict(), "churn.pt")
log.info("done")
dist.destroy_process_group()
