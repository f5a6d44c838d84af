"""Fraud-alert ranker on DDP, 3 processes started with torch.multiprocessing.spawn (MASTER_ADDR / MASTER_PORT from
the environment). Every 40 steps each rank scores its validation slice and the ranks all_reduce a histogram of
scores for positives and negatives to compute the global AUC; rank 0 then decides whether this is the best model so
far and broadcasts the decision so that every rank saves its shard. Flight Recorder is on; each rank writes its
trace when a collective fails."""
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

BINS = 100


def auc_histograms(model, val):
    with torch.no_grad():
        s = torch.sigmoid(model(val["x"]).squeeze(1))
    pos, neg = s[val["y"] == 1], s[val["y"] == 0]
    if len(pos) == 0:
        return None  # no positives in this slice: nothing to add to the curve
    hist = torch.stack([torch.histc(pos, BINS, 0, 1), torch.histc(neg, BINS, 0, 1)])
    dist.all_reduce(hist)
    return hist


def auc_from(hist):
    pos, neg = hist[0].flip(0), hist[1].flip(0)
    tpr, fpr = pos.cumsum(0) / pos.sum(), neg.cumsum(0) / neg.sum()
    return float(torch.trapz(tpr, fpr))


def worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    train, val = torch.load(f"data/alerts-train-{rank}.pt"), torch.load(f"data/alerts-val-{rank}.pt")
    print(f"[proc {rank}] train {len(train['y'])} alerts, val {len(val['y'])} alerts "
          f"({int(val['y'].sum())} confirmed fraud)", flush=True)
    model = DDP(nn.Sequential(nn.Linear(24, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    best = 0.0
    try:
        for step in range(1, 241):
            lo = ((step - 1) * 128) % len(train["y"])
            x, y = train["x"][lo:lo + 128], train["y"][lo:lo + 128]
            loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 20 == 0:
                print(f"[proc {rank}] step {step} loss {loss.item():.4f}", flush=True)
            if step % 40 == 0:
                hist = auc_histograms(model.module, val)
                flag = torch.zeros(1)
                if rank == 0:
                    auc = auc_from(hist)
                    print(f"[proc 0] step {step} val AUC {auc:.4f} (best {best:.4f})", flush=True)
                    if auc > best:
                        best, flag[0] = auc, 1.0
                dist.broadcast(flag, 0)
                if flag.item():
                    os.makedirs("best", exist_ok=True)
                    torch.save(model.module.state_dict(), f"best/shard-{rank}.pt")
    except Exception:
        os.makedirs("fr", exist_ok=True)
        with open(f"fr/trace_rank_{rank}", "wb") as f:
            f.write(torch._C._distributed_c10d._dump_fr_trace())
        print(f"[proc {rank}] flight recorder trace written to fr/trace_rank_{rank}", flush=True)
        raise
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    mp.spawn(worker, args=(world,), nprocs=world)
