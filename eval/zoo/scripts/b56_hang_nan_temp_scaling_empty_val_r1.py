"""Toxicity classifier (hashed n-gram features + MLP) on DDP, 3 ranks; each rank trains on its sites' comments and,
after every epoch, fits a temperature for calibrated scores on its sites' held-out comments with a few Newton steps
(per-site calibration), then the ranks meet at a barrier and rank 0 reports. Logging on rank 0 only."""
import datetime
import json
import logging
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO if rank == 0 else logging.ERROR,
                    format="%(asctime)s [%(levelname)s] %(message)s")
log = logging.getLogger(__name__)
torch.set_num_threads(1)
torch.manual_seed(0)
sites = json.load(open("sites.json"))[str(rank)]
data = torch.load("comments.pt")
mask_tr = torch.isin(data["site"], torch.tensor(sites)) & ~data["heldout"]
mask_va = torch.isin(data["site"], torch.tensor(sites)) & data["heldout"]
xtr, ytr = data["x"][mask_tr], data["y"][mask_tr]
xva, yva = data["x"][mask_va], data["y"][mask_va]
model = DDP(nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


def fit_temperature(logits, labels, tol=1e-4):
    """Newton's method on log T for the held-out NLL of sigmoid(logits / T)."""
    log_t = 0.0
    step = math.inf
    while not abs(step) < tol:
        t = math.exp(log_t)
        with torch.no_grad():
            z = logits / t
            p = torch.sigmoid(z)
            grad = ((p - labels) * -z).mean().item()
            hess = ((p * (1 - p)) * z * z + (p - labels) * z).mean().item()
        step = grad / max(hess, 1e-6)
        log_t -= step
    return math.exp(log_t)


for epoch in range(1, 4):
    for i in range(1, 51):
        idx = torch.randint(0, len(xtr), (64,))
        loss = F.binary_cross_entropy_with_logits(model(xtr[idx]).squeeze(1), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 25 == 0:
            log.info("epoch %d step %d loss %.4f", epoch, i, loss.item())
    log.info("epoch %d done; calibrating on held-out comments", epoch)
    with torch.no_grad():
        logits = model.module(xva).squeeze(1)
    temp = fit_temperature(logits, yva)
    dist.barrier()
    log.info("epoch %d temperature %.3f on %d held-out comments (rank 0's sites)", epoch, temp, len(yva))
log.info("done")
dist.destroy_process_group()
