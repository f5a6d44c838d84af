"""Fraud classifier (MLP on transaction features) on DDP, 3 ranks. Every 50 steps each rank scores its slice of the
review queue and writes the transactions it flags to review/flagged-step<N>-rank<R>.jsonl; after the files are written
the ranks meet on a separate CPU group used for coordination, and rank 0 merges them for the analysts. The job keeps
PyTorch's Flight Recorder on (TORCH_FR_BUFFER_SIZE) and each rank writes its trace when a collective fails."""
import datetime
import json
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
ctrl = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=25))  # coordination group
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s | rank {rank} | %(levelname)-7s | %(message)s")
log = logging.getLogger("fraud")
torch.set_num_threads(1)
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(48, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
queue = torch.load(f"review/queue-rank{rank}.pt")  # this rank's slice of the review queue
os.makedirs("review", exist_ok=True)


def dump_flight_recorder():
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE", "fr/trace_rank_")
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    with open(f"{prefix}{rank}", "wb") as f:
        f.write(torch._C._distributed_c10d._dump_fr_trace())
    log.error("flight recorder trace written to %s%d", prefix, rank)


try:
    for step in range(1, 301):
        x = torch.randn(256, 48, generator=g)
        y = ((x[:, :4].sum(1) + 0.3 * torch.randn(256, generator=g)) > 2.2).float()
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            log.info("step %d/300 loss %.4f", step, loss.item())
        if step % 50 == 0:
            with torch.no_grad():
                p = torch.sigmoid(model.module(queue["x"]).squeeze(1))
            flagged = [int(i) for i in queue["ids"][p > 0.9]]
            if not flagged:
                log.info("review step %d: nothing flagged in this slice (%d transactions)", step, len(queue["ids"]))
            else:
                path = f"review/flagged-step{step}-rank{rank}.jsonl"
                with open(path, "w") as f:
                    for i in flagged:
                        f.write(json.dumps({"txn": i, "step": step}) + "\n")
                log.info("review step %d: %d flagged -> %s", step, len(flagged), path)
                dist.barrier(group=ctrl)  # every rank's file is written
                if rank == 0:
                    n = sum(1 for r in range(world) for _ in open(f"review/flagged-step{step}-rank{r}.jsonl"))
                    log.info("review step %d: merged %d flagged transactions for the analysts", step, n)
except Exception:
    dump_flight_recorder()
    raise
log.info("done")
dist.destroy_process_group()
