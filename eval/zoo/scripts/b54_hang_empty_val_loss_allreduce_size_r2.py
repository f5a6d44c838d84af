"""Intent classifier (bag of embeddings) on DDP, 3 ranks, each with its own train and validation shard. Every 50
steps each rank evaluates its validation shard in batches of 64 and the per-batch losses are summed across ranks
with an all_reduce before rank 0 logs the mean. Flight Recorder is on; a rank writes its trace to fr/ on a
collective error."""
import datetime
import logging
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s [%(levelname)s] rank={rank} %(name)s: %(message)s")
log = logging.getLogger("intent")
torch.set_num_threads(1)
torch.manual_seed(0)

train, val = torch.load(f"data/train-{rank}.pt"), torch.load(f"data/val-{rank}.pt")
train_dl = DataLoader(TensorDataset(train["ids"], train["label"]), batch_size=32, shuffle=True, drop_last=True)
val_dl = DataLoader(TensorDataset(val["ids"], val["label"]), batch_size=64, drop_last=True)
log.info("train %d utterances, val %d utterances", len(train["ids"]), len(val["ids"]))
model = DDP(nn.Sequential(nn.EmbeddingBag(5000, 128), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 24)))
opt = torch.optim.Adam(model.parameters(), lr=2e-3)


def evaluate():
    model.eval()
    losses = []
    with torch.no_grad():
        for ids, label in val_dl:
            losses.append(F.cross_entropy(model.module(ids), label).item())
    model.train()
    t = torch.tensor(losses)
    dist.all_reduce(t)  # sum each batch's loss over the ranks
    return (t / world).mean().item()


def save_flight_recorder():
    os.makedirs("fr", exist_ok=True)
    with open(f"fr/nccl_trace_rank_{rank}", "wb") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace())
    log.error("flight recorder dump saved to fr/nccl_trace_rank_%d", rank)


step = 0
try:
    for epoch in range(20):
        for ids, label in train_dl:
            step += 1
            loss = F.cross_entropy(model(ids), label)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
            if step % 50 == 0:
                val_loss = evaluate()
                if rank == 0:
                    log.info("step %d val_loss %.4f", step, val_loss)
            if step == 300:
                raise SystemExit(0)
except SystemExit:
    pass
except Exception:
    save_flight_recorder()
    raise
log.info("training finished")
dist.destroy_process_group()
