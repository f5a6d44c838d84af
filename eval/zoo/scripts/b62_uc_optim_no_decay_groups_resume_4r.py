"""Text classifier (embedding + 2-layer transformer encoder + head) on DDP, 4 ranks, AdamW with weight decay.
Parameters are split into a decay group and a no-decay group (biases, LayerNorm and, since this week, the embeddings).
Resumes from ckpt/last.pt."""
import datetime
import logging
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s rank{rank} %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
torch.set_num_threads(1)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5000, 64)
        self.pos = nn.Embedding(64, 64)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, batch_first=True), 2)
        self.head = nn.Linear(64, 6)

    def forward(self, x):
        h = self.embed(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.enc(h).mean(1))


def param_groups(model, wd):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.ndim < 2 or "norm" in name or "embed" in name or "pos" in name:
            no_decay.append(p)
        else:
            decay.append(p)
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


model = Classifier()
opt = torch.optim.AdamW(param_groups(model, 0.05), lr=2e-4)
log.info("optimizer groups: %s", [len(g["params"]) for g in opt.param_groups])
step0 = 0
if os.path.exists("ckpt/last.pt"):
    ckpt = torch.load("ckpt/last.pt", map_location="cpu")
    log.info("resuming from ckpt/last.pt (step %d)", ckpt["step"])
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    step0 = ckpt["step"]
model = DDP(model)
g = torch.Generator().manual_seed(rank)
for step in range(step0 + 1, step0 + 201):
    x = torch.randint(0, 5000, (32, 48), generator=g)
    y = torch.randint(0, 6, (32,), generator=g)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        log.info("step %d loss %.4f", step, loss.item())
dist.destroy_process_group()
