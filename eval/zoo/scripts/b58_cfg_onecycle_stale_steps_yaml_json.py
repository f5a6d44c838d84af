"""Sentiment classifier (embedding + 1-d conv + pooling) on DDP, 4 ranks, with the one-cycle schedule; the schedule
length comes from the run config (configs/sentiment.yaml: epochs, steps_per_epoch). Every rank logs JSON lines,
rank 0 also shows a tqdm bar; the run prints its config and a full dump of the class-weight vector at start."""
import datetime
import json
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


class JsonLines(logging.Formatter):
    def format(self, r):
        return json.dumps({"@timestamp": datetime.datetime.fromtimestamp(r.created).astimezone().isoformat(),
                           "severity": r.levelname, "rank": int(os.environ.get("RANK", 0)), "message": r.getMessage()})


h = logging.StreamHandler(sys.stdout)
h.setFormatter(JsonLines())
logging.basicConfig(level=logging.INFO, handlers=[h])
log = logging.getLogger("sentiment")

cfg = yaml.safe_load(open("configs/sentiment.yaml"))
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
torch.manual_seed(0)
data = torch.load("data/reviews_tok.pt")
ds = TensorDataset(data["ids"], data["label"])
sampler = DistributedSampler(ds, shuffle=True, seed=0)
loader = DataLoader(ds, batch_size=cfg["batch_size"], sampler=sampler)
log.info("config %s; %d reviews, %d batches per epoch on this rank", json.dumps(cfg), len(ds), len(loader))


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(8000, 48)
        self.conv = nn.Conv1d(48, 96, 3, padding=1)
        self.out = nn.Linear(96, 3)

    def forward(self, ids):
        return self.out(F.relu(self.conv(self.emb(ids).transpose(1, 2))).amax(2))


model = DDP(Conv())
opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg["max_lr"], epochs=cfg["epochs"],
                                            steps_per_epoch=cfg["steps_per_epoch"])
class_w = torch.bincount(data["label"], minlength=3).float()
class_w = class_w.sum() / (3 * class_w)
if rank == 0:
    torch.set_printoptions(profile="full", linewidth=400)
    print("class weights:", class_w, flush=True)
    print("first batch token ids (debug):", next(iter(loader))[0][:4].reshape(-1), flush=True)
step, t0 = 0, time.time()
for epoch in range(cfg["epochs"]):
    sampler.set_epoch(epoch)
    for ids, label in tqdm(loader, disable=rank != 0, desc=f"epoch {epoch}", mininterval=0.3):
        with torch.cuda.amp.autocast():  # kept from the A100 config
            loss = F.cross_entropy(model(ids), label, weight=class_w)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        if step % 25 == 0:
            log.info("epoch %d step %d loss %.4f lr %.3e", epoch, step, loss.item(), sched.get_last_lr()[0])
    log.info("epoch %d finished at step %d (%.1fs)", epoch, step, time.time() - t0)
dist.destroy_process_group()
