"""Intent classifier (EmbeddingBag + MLP) on DDP, 3 processes. Each rank trains on its own shard and evaluates on its
own validation shard (data/val-<rank>.pt); the evaluation loop all-reduces the running loss/accuracy after every
batch so rank 0 can show the global running numbers; after the evaluation every rank waits in a barrier while rank 0
saves the best checkpoint."""
import datetime
import logging
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s | %(levelname)s | %(message)s")
log = logging.getLogger("intent")
torch.manual_seed(0)
VOCAB, CLASSES, EPOCHS = 5000, 21, 2


class Intent(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 64, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, CLASSES))

    def forward(self, x):
        return self.mlp(self.emb(x))


train = torch.load(f"data/train-{rank}.pt")
val = torch.load(f"data/val-{rank}.pt")
train_dl = DataLoader(TensorDataset(train["x"], train["y"]), batch_size=64, shuffle=True)
val_dl = DataLoader(TensorDataset(val["x"], val["y"]), batch_size=64)
model = DDP(Intent())
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
if rank == 0:
    log.info("world %d, %d train batches per rank, eval batch 64", world, len(train_dl))
best = 0.0
for epoch in range(EPOCHS):
    model.train()
    t0 = time.time()
    for i, (x, y) in enumerate(train_dl, 1):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 20 == 0 and rank == 0:
            log.info("epoch %d step %d/%d loss %.4f (%.1f ms/step)", epoch, i, len(train_dl), loss.item(),
                     1000 * (time.time() - t0) / 20)
            t0 = time.time()
    model.eval()
    run = torch.zeros(3)
    with torch.no_grad():
        for j, (x, y) in enumerate(val_dl, 1):
            out = model(x)
            stats = torch.tensor([F.cross_entropy(out, y, reduction="sum").item(),
                                  (out.argmax(1) == y).sum().item(), float(len(y))])
            dist.all_reduce(stats)
            run += stats
            if rank == 0 and j % 2 == 0:
                log.info("eval epoch %d batch %d: running loss %.4f acc %.4f", epoch, j, run[0] / run[2],
                         run[1] / run[2])
    acc = (run[1] / run[2]).item()
    if rank == 0:
        log.info("eval epoch %d: loss %.4f acc %.4f (%d samples)", epoch, run[0] / run[2], acc, int(run[2]))
    dist.barrier()
    if rank == 0 and acc > best:
        best = acc
        torch.save(model.module.state_dict(), "best.pt")
        log.info("new best %.4f saved to best.pt", best)
    dist.barrier()
if rank == 0:
    log.info("done, best acc %.4f", best)
dist.destroy_process_group()
