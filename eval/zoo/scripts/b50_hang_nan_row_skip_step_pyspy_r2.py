"""Bearing-wear regressor (MLP over vibration-spectrum features) on DDP, 3 ranks; each rank reads one site's
measurement table (data/site-<rank>.parquet). A batch whose loss is not finite is skipped (the step is dropped and
training goes on), so that one bad batch does not poison Adam's moments; at the end of each epoch the ranks meet at
a barrier and rank 0 writes a checkpoint."""
import datetime
import logging
import time

import pandas as pd
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s wear.rank{rank}: %(message)s")
log = logging.getLogger("wear")
torch.set_num_threads(1)

df = pd.read_parquet(f"data/site-{rank}.parquet")
cols = [c for c in df.columns if c.startswith("band_")] + ["rpm", "load_kn", "temp_c"]
x = torch.tensor(df[cols].to_numpy(), dtype=torch.float32)
y = torch.tensor(df["wear_um"].to_numpy(), dtype=torch.float32)
x = (x - x.nanmean(0)) / 10
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=False)
log.info("site %d: %d measurements, %d features, %d steps/epoch", rank, len(y), len(cols), len(loader))
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(len(cols), 128), nn.SiLU(), nn.Linear(128, 64), nn.SiLU(), nn.Linear(64, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
skipped = 0
t0 = time.time()
for epoch in range(3):
    for step, (xb, yb) in enumerate(loader):
        loss = F.mse_loss(model(xb).squeeze(1), yb)
        if not torch.isfinite(loss):
            skipped += 1
            log.warning("epoch %d step %d: non-finite loss (%s), skipping batch (%d skipped so far)",
                        epoch, step, loss.item(), skipped)
            opt.zero_grad()
            continue
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("epoch %d step %d/%d mse %.4f %.1fs", epoch, step, len(loader), loss.item(), time.time() - t0)
    log.info("epoch %d finished, waiting for the other ranks", epoch)
    dist.barrier()
    if rank == 0:
        torch.save({"epoch": epoch, "model": model.module.state_dict()}, f"wear-epoch{epoch}.pt")
        log.info("saved wear-epoch%d.pt", epoch)
log.info("done")
dist.destroy_process_group()
